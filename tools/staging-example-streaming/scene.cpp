#include "scene.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "assets.hpp"
#include "scene_frag.h"
#include "scene_vert.h"
#include "vulkan_commands.hpp"

namespace example {

namespace {

VkShaderModule module(VkDevice device, const uint32_t* code, std::size_t bytes) {
  const VkShaderModuleCreateInfo info{
      .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes, .pCode = code};
  VkShaderModule m = VK_NULL_HANDLE;
  vkCreateShaderModule(device, &info, nullptr, &m);
  return m;
}

namespace support = staging::vulkan::support;

constexpr VkFormat kColor = VK_FORMAT_R8G8B8A8_UNORM;
/// The colour attachment written by the draws.
constexpr support::Scope kColorWrite{VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT,
                                     VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT};

// The scene's graphics pipeline: `stages` on a triangle list of Vertex, one RGBA8 colour
// attachment (dynamic rendering), viewport and scissor dynamic.
VkResult create_pipeline(VkDevice dev, VkPipelineLayout layout,
                         const VkPipelineShaderStageCreateInfo* stages, VkPipeline* pipeline) {
  const VkVertexInputBindingDescription vb{0, sizeof(Vertex), VK_VERTEX_INPUT_RATE_VERTEX};
  const VkVertexInputAttributeDescription attributes[2] = {{0, 0, VK_FORMAT_R32G32_SFLOAT, 0},
                                                           {1, 0, VK_FORMAT_R32G32_SFLOAT, 8}};
  const VkPipelineVertexInputStateCreateInfo vertex_input{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
      .vertexBindingDescriptionCount = 1,
      .pVertexBindingDescriptions = &vb,
      .vertexAttributeDescriptionCount = 2,
      .pVertexAttributeDescriptions = attributes};
  const VkPipelineInputAssemblyStateCreateInfo assembly{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
      .topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST};
  const VkPipelineViewportStateCreateInfo viewport{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
      .viewportCount = 1,
      .scissorCount = 1};
  const VkPipelineRasterizationStateCreateInfo raster{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
      .polygonMode = VK_POLYGON_MODE_FILL,
      .cullMode = VK_CULL_MODE_NONE,
      .lineWidth = 1.0f};
  const VkPipelineMultisampleStateCreateInfo multisample{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
      .rasterizationSamples = VK_SAMPLE_COUNT_1_BIT};
  const VkPipelineColorBlendAttachmentState blend_attachment{
      .colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                        VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT};
  const VkPipelineColorBlendStateCreateInfo blend{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
      .attachmentCount = 1,
      .pAttachments = &blend_attachment};
  const VkDynamicState dynamic_states[2] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
  const VkPipelineDynamicStateCreateInfo dynamic{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO,
      .dynamicStateCount = 2,
      .pDynamicStates = dynamic_states};
  const VkPipelineRenderingCreateInfo rendering{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO,
      .colorAttachmentCount = 1,
      .pColorAttachmentFormats = &kColor};
  const VkGraphicsPipelineCreateInfo pipeline_info{
      .sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
      .pNext = &rendering,
      .stageCount = 2,
      .pStages = stages,
      .pVertexInputState = &vertex_input,
      .pInputAssemblyState = &assembly,
      .pViewportState = &viewport,
      .pRasterizationState = &raster,
      .pMultisampleState = &multisample,
      .pColorBlendState = &blend,
      .pDynamicState = &dynamic,
      .layout = layout};
  return vkCreateGraphicsPipelines(dev, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, pipeline);
}

}  // namespace

Scene::Scene(StreamingDevice& device, uint32_t width, uint32_t height, uint32_t objects)
    : d_(device), width_(width), height_(height), drawables_(objects) {
  for (auto& b : bound_)
    b.assign(objects, VK_NULL_HANDLE);
  ok_ = init();
}

bool Scene::init() {
  if (!init_target() || !init_descriptors() || !init_pipeline()) return false;
  init_commands();
  return true;
}

// The colour target, its view and the sampler.
bool Scene::init_target() {
  VkDevice dev = d_.device;
  // The colour target.
  color_ = d_.make_image(kColor, {width_, height_, 1}, 1, 1,
                         VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT);
  if (color_.image == VK_NULL_HANDLE) {
    why_ = "the colour target could not be made";
    return false;
  }
  const VkImageViewCreateInfo view_info{
      .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
      .image = color_.image,
      .viewType = VK_IMAGE_VIEW_TYPE_2D,
      .format = kColor,
      .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
  vkCreateImageView(dev, &view_info, nullptr, &color_view_);

  const VkSamplerCreateInfo sampler_info{.sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
                                         .magFilter = VK_FILTER_LINEAR,
                                         .minFilter = VK_FILTER_LINEAR,
                                         .mipmapMode = VK_SAMPLER_MIPMAP_MODE_LINEAR,
                                         .addressModeU = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                                         .addressModeV = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                                         .addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                                         .maxLod = VK_LOD_CLAMP_NONE};
  vkCreateSampler(dev, &sampler_info, nullptr, &sampler_);
  return true;
}

bool Scene::init_descriptors() {
  VkDevice dev = d_.device;
  // One combined image sampler per object and frame slot.
  const VkDescriptorSetLayoutBinding binding{
      .binding = 0,
      .descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
      .descriptorCount = 1,
      .stageFlags = VK_SHADER_STAGE_FRAGMENT_BIT};
  const VkDescriptorSetLayoutCreateInfo set_info{
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 1,
      .pBindings = &binding};
  vkCreateDescriptorSetLayout(dev, &set_info, nullptr, &set_layout_);
  const uint32_t sets = 2 * objects();
  const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, sets};
  const VkDescriptorPoolCreateInfo pool_info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                             .maxSets = sets,
                                             .poolSizeCount = 1,
                                             .pPoolSizes = &size};
  vkCreateDescriptorPool(dev, &pool_info, nullptr, &pool_);
  for (auto& s : sets_) {
    s.resize(objects());
    std::vector<VkDescriptorSetLayout> layouts(objects(), set_layout_);
    const VkDescriptorSetAllocateInfo info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                           .descriptorPool = pool_,
                                           .descriptorSetCount = objects(),
                                           .pSetLayouts = layouts.data()};
    if (vkAllocateDescriptorSets(dev, &info, s.data()) != VK_SUCCESS) {
      why_ = "vkAllocateDescriptorSets failed";
      return false;
    }
  }
  return true;
}

bool Scene::init_pipeline() {
  VkDevice dev = d_.device;
  const VkPushConstantRange push{VK_SHADER_STAGE_VERTEX_BIT, 0, 32};
  const VkPipelineLayoutCreateInfo layout_info{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &set_layout_,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &push};
  vkCreatePipelineLayout(dev, &layout_info, nullptr, &layout_);

  VkShaderModule vert = module(dev, scene_vert_spv, sizeof scene_vert_spv);
  VkShaderModule frag = module(dev, scene_frag_spv, sizeof scene_frag_spv);
  const VkPipelineShaderStageCreateInfo stages[2] = {
      {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
       .stage = VK_SHADER_STAGE_VERTEX_BIT,
       .module = vert,
       .pName = "main"},
      {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
       .stage = VK_SHADER_STAGE_FRAGMENT_BIT,
       .module = frag,
       .pName = "main"}};
  const VkResult made = create_pipeline(dev, layout_, stages, &pipeline_);
  vkDestroyShaderModule(dev, vert, nullptr);
  vkDestroyShaderModule(dev, frag, nullptr);
  if (made != VK_SUCCESS) {
    why_ = "vkCreateGraphicsPipelines failed";
    return false;
  }
  return true;
}

void Scene::init_commands() {
  VkDevice dev = d_.device;
  const VkCommandPoolCreateInfo commands_info{
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
      .queueFamilyIndex = d_.graphics_family};
  vkCreateCommandPool(dev, &commands_info, nullptr, &commands_);
  const VkCommandBufferAllocateInfo cmd_info{
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = commands_,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 2};
  vkAllocateCommandBuffers(dev, &cmd_info, cmd_);
  const VkSemaphoreTypeCreateInfo type{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                       .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
  const VkSemaphoreCreateInfo sem{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
  vkCreateSemaphore(dev, &sem, nullptr, &timeline_);
}

Scene::~Scene() {
  VkDevice dev = d_.device;
  if (timeline_ != VK_NULL_HANDLE && frame_ > 0) {
    const VkSemaphoreWaitInfo wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                   .semaphoreCount = 1,
                                   .pSemaphores = &timeline_,
                                   .pValues = &frame_};
    vkWaitSemaphores(dev, &wait, UINT64_MAX);
  }
  vkDestroySemaphore(dev, timeline_, nullptr);
  vkDestroyCommandPool(dev, commands_, nullptr);
  vkDestroyPipeline(dev, pipeline_, nullptr);
  vkDestroyPipelineLayout(dev, layout_, nullptr);
  vkDestroyDescriptorPool(dev, pool_, nullptr);
  vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
  vkDestroySampler(dev, sampler_, nullptr);
  vkDestroyImageView(dev, color_view_, nullptr);
  d_.destroy(color_);
}

void Scene::set(uint32_t i, const Drawable& d) {
  drawables_[i] = d;
}

bool Scene::finished(uint64_t value) const {
  uint64_t done = 0;
  vkGetSemaphoreCounterValue(d_.device, timeline_, &done);
  return done >= value;
}

uint64_t Scene::render(std::span<const VkSemaphoreSubmitInfo> waits,
                       const std::function<void(VkCommandBuffer)>& before_draws) {
  const uint64_t value = ++frame_;
  const uint32_t slot = static_cast<uint32_t>(value % 2);
  if (value > 2) {  // the frame that used this slot's command buffer and descriptor sets
    const uint64_t previous = value - 2;
    const VkSemaphoreWaitInfo wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                   .semaphoreCount = 1,
                                   .pSemaphores = &timeline_,
                                   .pValues = &previous};
    vkWaitSemaphores(d_.device, &wait, UINT64_MAX);
  }
  update_descriptors(slot);

  VkCommandBuffer cmd = cmd_[slot];
  const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  vkBeginCommandBuffer(cmd, &begin);
  if (before_draws) before_draws(cmd);
  record_draws(cmd, slot);
  vkEndCommandBuffer(cmd);
  submit(cmd, waits, value);
  return value;
}

void Scene::update_descriptors(uint32_t slot) {
  // Descriptor sets of this slot whose texture changed.
  std::vector<VkDescriptorImageInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  infos.reserve(objects());
  for (uint32_t i = 0; i < objects(); ++i) {
    if (drawables_[i].texture == VK_NULL_HANDLE || bound_[slot][i] == drawables_[i].texture)
      continue;
    bound_[slot][i] = drawables_[i].texture;
    infos.push_back({sampler_, drawables_[i].texture, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL});
    writes.push_back({.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                      .dstSet = sets_[slot][i],
                      .dstBinding = 0,
                      .descriptorCount = 1,
                      .descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
                      .pImageInfo = &infos.back()});
  }
  if (!writes.empty()) {
    vkUpdateDescriptorSets(d_.device, static_cast<uint32_t>(writes.size()), writes.data(), 0,
                           nullptr);
  }
}

void Scene::record_draws(VkCommandBuffer cmd, uint32_t slot) {
  // The target is cleared each frame; the previous frame's writes (and the read-back) come first.
  const VkImageMemoryBarrier2 to_attachment =
      support::layout_barrier(color_.image, 1, VK_IMAGE_LAYOUT_UNDEFINED,
                              VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, kColorWrite, kColorWrite);
  support::pipeline_barrier(cmd, {&to_attachment, 1});
  const VkRenderingAttachmentInfo attachment{
      .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
      .imageView = color_view_,
      .imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
      .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
      .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
      .clearValue = {.color = {{0.06f, 0.07f, 0.09f, 1.0f}}}};
  const VkRenderingInfo rendering{.sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
                                  .renderArea = {{0, 0}, {width_, height_}},
                                  .layerCount = 1,
                                  .colorAttachmentCount = 1,
                                  .pColorAttachments = &attachment};
  vkCmdBeginRendering(cmd, &rendering);
  const VkViewport vp{0, 0, static_cast<float>(width_), static_cast<float>(height_), 0, 1};
  const VkRect2D scissor{{0, 0}, {width_, height_}};
  vkCmdSetViewport(cmd, 0, 1, &vp);
  vkCmdSetScissor(cmd, 0, 1, &scissor);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline_);
  // Objects on a grid of cells, each filling most of its cell.
  const auto columns = static_cast<uint32_t>(std::ceil(std::sqrt(objects() * 16.0 / 9.0)));
  const uint32_t rows = (objects() + columns - 1) / columns;
  for (uint32_t i = 0; i < objects(); ++i) {
    const Drawable& o = drawables_[i];
    if (o.texture == VK_NULL_HANDLE || o.mesh == VK_NULL_HANDLE) continue;
    const float cw = 2.0f / static_cast<float>(columns), ch = 2.0f / static_cast<float>(rows);
    const float place[8] = {-1.0f + cw * (static_cast<float>(i % columns) + 0.5f),
                            -1.0f + ch * (static_cast<float>(i / columns) + 0.5f),
                            cw * 0.45f,
                            ch * 0.45f,
                            o.tint[0],
                            o.tint[1],
                            o.tint[2],
                            o.tint[3]};
    vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof place, place);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout_, 0, 1, &sets_[slot][i], 0,
                            nullptr);
    const VkDeviceSize zero = 0;
    vkCmdBindVertexBuffers(cmd, 0, 1, &o.mesh, &zero);
    vkCmdBindIndexBuffer(cmd, o.mesh, o.index_offset, VK_INDEX_TYPE_UINT32);
    vkCmdDrawIndexed(cmd, o.index_count, 1, 0, 0, 0);
  }
  vkCmdEndRendering(cmd);
}

void Scene::submit(VkCommandBuffer cmd, std::span<const VkSemaphoreSubmitInfo> waits,
                   uint64_t value) {
  const VkCommandBufferSubmitInfo cmd_info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                           .commandBuffer = cmd};
  const VkSemaphoreSubmitInfo signal{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                     .semaphore = timeline_,
                                     .value = value,
                                     .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
  const VkSubmitInfo2 submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                             .waitSemaphoreInfoCount = static_cast<uint32_t>(waits.size()),
                             .pWaitSemaphoreInfos = waits.data(),
                             .commandBufferInfoCount = 1,
                             .pCommandBufferInfos = &cmd_info,
                             .signalSemaphoreInfoCount = 1,
                             .pSignalSemaphoreInfos = &signal};
  std::lock_guard lock(d_.graphics_mutex);
  vkQueueSubmit2(d_.graphics, 1, &submit, VK_NULL_HANDLE);
}

std::vector<uint8_t> Scene::read_back() {
  const uint64_t bytes = uint64_t{width_} * height_ * 4;
  HostBuffer back = d_.make_host_buffer(bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  // After every frame (same queue): the colour image to TRANSFER_SRC and copied out.
  const std::vector<VkBufferImageCopy> region = support::packed_mip_copies(width_, height_, 1, 4);
  const bool copied = d_.run_once([&](VkCommandBuffer cmd) {
    support::record_image_readback(cmd, color_.image, 1, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                                   kColorWrite, kColorWrite, region, back.buffer);
  });
  std::vector<uint8_t> out(bytes);
  if (copied && back.mapped != nullptr) std::memcpy(out.data(), back.mapped, bytes);
  d_.destroy(back);
  return out;
}

}  // namespace example
