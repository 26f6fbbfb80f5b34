#include "staging/vulkan/dispatch.hpp"

#include <string>

namespace staging::vulkan {

namespace {

// Looks `name` up through `get`, then (for functions promoted from an extension) `name` + "KHR".
template <class Get, class Handle>
PFN_vkVoidFunction lookup(Get get, Handle handle, const char* name) {
  if (PFN_vkVoidFunction f = get(handle, name)) return f;
  const std::string khr = std::string(name) + "KHR";
  return get(handle, khr.c_str());
}

}  // namespace

Dispatch Dispatch::load(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance,
                        VkDevice device) noexcept {
  Dispatch d;
  if (get_instance_proc_addr == nullptr) return d;
#define STAGING_VULKAN_LOAD(name) \
  d.name = reinterpret_cast<PFN_##name>(lookup(get_instance_proc_addr, instance, #name));
  STAGING_VULKAN_INSTANCE_FUNCTIONS(STAGING_VULKAN_LOAD)
  STAGING_VULKAN_OPTIONAL_INSTANCE_FUNCTIONS(STAGING_VULKAN_LOAD)
#undef STAGING_VULKAN_LOAD

  const auto get_device_proc_addr = reinterpret_cast<PFN_vkGetDeviceProcAddr>(
      get_instance_proc_addr(instance, "vkGetDeviceProcAddr"));
  if (get_device_proc_addr == nullptr || device == VK_NULL_HANDLE) return d;
#define STAGING_VULKAN_LOAD(name) \
  d.name = reinterpret_cast<PFN_##name>(lookup(get_device_proc_addr, device, #name));
  STAGING_VULKAN_DEVICE_FUNCTIONS(STAGING_VULKAN_LOAD)
  STAGING_VULKAN_STREAM_FUNCTIONS(STAGING_VULKAN_LOAD)
#undef STAGING_VULKAN_LOAD
  return d;
}

std::string_view Dispatch::missing() const noexcept {
#define STAGING_VULKAN_CHECK(name) \
  if (name == nullptr) return #name;
  STAGING_VULKAN_INSTANCE_FUNCTIONS(STAGING_VULKAN_CHECK)
  STAGING_VULKAN_DEVICE_FUNCTIONS(STAGING_VULKAN_CHECK)
#undef STAGING_VULKAN_CHECK
  return {};
}

std::string_view Dispatch::missing_for_streamer() const noexcept {
  if (const std::string_view m = missing(); !m.empty()) return m;
#define STAGING_VULKAN_CHECK(name) \
  if (name == nullptr) return #name;
  STAGING_VULKAN_STREAM_FUNCTIONS(STAGING_VULKAN_CHECK)
#undef STAGING_VULKAN_CHECK
  return {};
}

}  // namespace staging::vulkan
