// Dispatch::from_loader: the Vulkan loader, loaded at run time. The library never links libvulkan
// (no source calls a Vulkan prototype), so programs using it start where Vulkan is not installed;
// the loader is looked for only when a caller asks for it here.
#include <vulkan/vulkan_core.h>

#include "staging/vulkan/dispatch.hpp"

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace staging::vulkan {

namespace {

// Opens the platform's Vulkan loader once per process (never closed: function pointers taken
// from it must stay valid) and returns its vkGetInstanceProcAddr, or null.
PFN_vkGetInstanceProcAddr open_loader() noexcept {
#if defined(_WIN32)
  HMODULE module = LoadLibraryA("vulkan-1.dll");
  if (module == nullptr) return nullptr;
  return reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      reinterpret_cast<void*>(GetProcAddress(module, "vkGetInstanceProcAddr")));
#else
#if defined(__APPLE__)
  const char* const names[] = {"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib"};
#else
  const char* const names[] = {"libvulkan.so.1", "libvulkan.so"};
#endif
  for (const char* name : names) {
    if (void* module = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      return reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(module, "vkGetInstanceProcAddr"));
    }
  }
  return nullptr;
#endif
}

}  // namespace

PFN_vkGetInstanceProcAddr Dispatch::loader_proc_addr() noexcept {
  static const PFN_vkGetInstanceProcAddr get = open_loader();  // thread-safe, once
  return get;
}

Dispatch Dispatch::from_loader(VkInstance instance, VkDevice device) noexcept {
  return load(loader_proc_addr(), instance, device);
}

}  // namespace staging::vulkan
