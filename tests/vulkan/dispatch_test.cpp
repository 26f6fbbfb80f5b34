// Dispatch::load(): core names first, KHR names for functions promoted from extensions, device
// functions through vkGetDeviceProcAddr; missing() names what is absent. A fake
// vkGetInstanceProcAddr stands in for the loader (and the real one, opened at run time, once).
#include "staging/vulkan/dispatch.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace staging::vulkan {
namespace {

std::set<std::string> g_known;  // names the fake loader resolves
std::set<std::string> g_asked;

void fake_function() {}

PFN_vkVoidFunction fake_lookup(const char* name) {
  g_asked.insert(name);
  return g_known.count(name) ? reinterpret_cast<PFN_vkVoidFunction>(&fake_function) : nullptr;
}
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_device_proc_addr(VkDevice, const char* name) {
  return fake_lookup(name);
}
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_instance_proc_addr(VkInstance, const char* name) {
  if (std::string(name) == "vkGetDeviceProcAddr")
    return reinterpret_cast<PFN_vkVoidFunction>(&fake_device_proc_addr);
  return fake_lookup(name);
}

const VkDevice kDevice = reinterpret_cast<VkDevice>(uintptr_t{0x1234});

TEST(Dispatch, AnEmptyTableNamesItsFirstMissingFunction) {
  EXPECT_EQ(Dispatch{}.missing(), "vkGetPhysicalDeviceProperties");
}

TEST(Dispatch, LoadsCoreNamesAndFallsBackToKhrAliases) {
  g_known = {"vkGetPhysicalDeviceProperties", "vkGetPhysicalDeviceMemoryProperties",
             "vkCreateBuffer", "vkDestroyBuffer", "vkGetBufferMemoryRequirements",
             "vkAllocateMemory", "vkFreeMemory", "vkBindBufferMemory", "vkMapMemory",
             "vkUnmapMemory", "vkFlushMappedMemoryRanges", "vkCreateSemaphore",
             "vkDestroySemaphore",
             // a Vulkan 1.2 device with VK_KHR_synchronization2: only the KHR barrier exists
             "vkGetSemaphoreCounterValue", "vkWaitSemaphores", "vkCmdCopyBuffer",
             "vkCmdCopyBufferToImage", "vkCmdUpdateBuffer", "vkCmdPipelineBarrier2KHR"};
  g_asked.clear();
  const Dispatch d = Dispatch::load(&fake_instance_proc_addr, VK_NULL_HANDLE, kDevice);
  EXPECT_EQ(d.missing(), "");
  EXPECT_NE(d.vkCmdPipelineBarrier2, nullptr);
  EXPECT_TRUE(g_asked.count("vkCmdPipelineBarrier2"));  // the core name was tried first
  EXPECT_FALSE(g_asked.count("vkCreateBufferKHR"));     // no alias lookup when the core name hits
}

TEST(Dispatch, MissingReportsAnAbsentFunction) {
  g_known = {"vkGetPhysicalDeviceProperties", "vkGetPhysicalDeviceMemoryProperties",
             "vkCreateBuffer"};
  const Dispatch d = Dispatch::load(&fake_instance_proc_addr, VK_NULL_HANDLE, kDevice);
  EXPECT_EQ(d.missing(), "vkDestroyBuffer");
  const Dispatch none = Dispatch::load(&fake_instance_proc_addr, VK_NULL_HANDLE, VK_NULL_HANDLE);
  EXPECT_EQ(none.missing(), "vkCreateBuffer");  // no device: device functions stay null
  EXPECT_EQ(Dispatch::load(nullptr, VK_NULL_HANDLE, kDevice).missing(),
            "vkGetPhysicalDeviceProperties");
}

// The optional functions are loaded like the instance-level ones, and neither missing() nor
// missing_for_streamer() asks for them: a table without them is as complete as before.
TEST(Dispatch, LoadsTheOptionalFunctionsAndNeverAsksForThem) {
#define STAGING_NAME(name) #name,
  const std::set<std::string> required = {STAGING_VULKAN_INSTANCE_FUNCTIONS(STAGING_NAME)
                                              STAGING_VULKAN_DEVICE_FUNCTIONS(STAGING_NAME)
                                                  STAGING_VULKAN_STREAM_FUNCTIONS(STAGING_NAME)};
  const std::set<std::string> optional = {STAGING_VULKAN_OPTIONAL_INSTANCE_FUNCTIONS(STAGING_NAME)};
#undef STAGING_NAME
  EXPECT_TRUE(optional.count("vkGetPhysicalDeviceQueueFamilyProperties"));
  g_known = required;
  g_known.insert(optional.begin(), optional.end());
  const Dispatch d = Dispatch::load(&fake_instance_proc_addr, VK_NULL_HANDLE, kDevice);
  EXPECT_NE(d.vkGetPhysicalDeviceQueueFamilyProperties, nullptr);
  EXPECT_EQ(d.missing_for_streamer(), "");

  Dispatch by_hand = d;  // filled by hand without it
  by_hand.vkGetPhysicalDeviceQueueFamilyProperties = nullptr;
  EXPECT_EQ(by_hand.missing(), "");
  EXPECT_EQ(by_hand.missing_for_streamer(), "");

  g_known = required;  // an implementation without it
  const Dispatch without = Dispatch::load(&fake_instance_proc_addr, VK_NULL_HANDLE, kDevice);
  EXPECT_EQ(without.vkGetPhysicalDeviceQueueFamilyProperties, nullptr);
  EXPECT_EQ(without.missing(), "");
  EXPECT_EQ(without.missing_for_streamer(), "");
}

// from_loader() opens the system's Vulkan loader at run time (the library does not link it): here,
// where one is installed, its vkGetInstanceProcAddr answers for the global functions.
TEST(Dispatch, OpensTheLoaderAtRunTime) {
  const PFN_vkGetInstanceProcAddr get = Dispatch::loader_proc_addr();
  if (get == nullptr) GTEST_SKIP() << "no Vulkan loader installed here";
  EXPECT_EQ(Dispatch::loader_proc_addr(), get);  // opened once
  EXPECT_NE(get(VK_NULL_HANDLE, "vkCreateInstance"), nullptr);
  // Without an instance, instance-level functions stay null and missing() says which.
  EXPECT_EQ(Dispatch::from_loader(VK_NULL_HANDLE, VK_NULL_HANDLE).missing(),
            "vkGetPhysicalDeviceProperties");
}

}  // namespace
}  // namespace staging::vulkan
