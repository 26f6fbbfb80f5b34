// staging-example-streaming: one object of the scene — a mesh in its rectangle of the screen.
#version 450

layout(location = 0) in vec2 in_position;  // [-1, 1]^2, the mesh's own space
layout(location = 1) in vec2 in_uv;

layout(push_constant) uniform Object {
  vec4 place;  // xy: the rectangle's centre, zw: its half size (normalized device coordinates)
  vec4 tint;   // multiplied with the texture (a placeholder shows grey)
} object;

layout(location = 0) out vec2 out_uv;
layout(location = 1) out vec4 out_tint;

void main() {
  gl_Position = vec4(object.place.xy + in_position * object.place.zw, 0.0, 1.0);
  out_uv = in_uv;
  out_tint = object.tint;
}
