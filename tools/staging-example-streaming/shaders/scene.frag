// staging-example-streaming: the object's texture, sampled with its mips.
#version 450

layout(set = 0, binding = 0) uniform sampler2D object_texture;

layout(location = 0) in vec2 in_uv;
layout(location = 1) in vec4 in_tint;
layout(location = 0) out vec4 out_color;

void main() {
  out_color = texture(object_texture, in_uv) * in_tint;
}
