// The rule for validation messages (vulkan_messages.hpp), and a first run on a fresh machine: the
// layer's note that its shader validation cache file does not exist yet passes; warnings,
// errors, performance and synchronization findings fail.
#include "vulkan_messages.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "vulkan_test_device.hpp"

namespace staging::vulkan::support {
namespace {

constexpr auto kInfo = VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT;
constexpr auto kWarning = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
constexpr auto kError = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
constexpr VkDebugUtilsMessageTypeFlagsEXT kGeneral = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
constexpr VkDebugUtilsMessageTypeFlagsEXT kValidation =
    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
constexpr VkDebugUtilsMessageTypeFlagsEXT kPerformance =
    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;

TEST(ValidationMessages, TheLayersCacheFileInformationPasses) {
  // "Cannot open shader validation cache at ~/.cache/... for reading (it may not exist yet)"
  EXPECT_EQ(classify(kInfo, kValidation, "UNASSIGNED-cache-file-error"), MessageKind::SetUp);
  EXPECT_EQ(classify(kInfo, kGeneral, "UNASSIGNED-cache-file-error"), MessageKind::SetUp);
}

TEST(ValidationMessages, TheLayersAndLoadersStartUpNotesPass) {
  EXPECT_EQ(classify(kInfo, kValidation, kLayerStatusId), MessageKind::SetUp);
  EXPECT_EQ(classify(kInfo, kGeneral, "Loader Message"), MessageKind::SetUp);
}

TEST(ValidationMessages, WarningsAndErrorsFail) {
  EXPECT_EQ(classify(kWarning, kValidation, "VUID-vkCmdCopyBuffer-srcOffset-00113"),
            MessageKind::Finding);
  EXPECT_EQ(classify(kError, kValidation, "VUID-vkCmdCopyBuffer-srcOffset-00113"),
            MessageKind::Finding);
  // A set-up id does not excuse a warning or an error.
  EXPECT_EQ(classify(kWarning, kValidation, "UNASSIGNED-cache-file-error"), MessageKind::Finding);
}

TEST(ValidationMessages, TheLoadersWordsAboutTheMachinePass) {
  // "env var 'VK_INSTANCE_LAYERS' defined and adding layers ..." (a capture layer, an overlay),
  // a broken layer manifest: the loader's general warnings and errors are not about the program.
  EXPECT_EQ(classify(kWarning, kGeneral, kLoaderMessageId), MessageKind::Environment);
  EXPECT_EQ(classify(kError, kGeneral, kLoaderMessageId), MessageKind::Environment);
  // The loader's checks of the program's calls (validation type) are findings.
  EXPECT_EQ(classify(kError, kValidation, kLoaderMessageId), MessageKind::Finding);
  EXPECT_EQ(classify(kWarning, kGeneral | kValidation, kLoaderMessageId), MessageKind::Finding);
  // Another id in a general warning is not the loader's.
  EXPECT_EQ(classify(kWarning, kGeneral, "UNASSIGNED-something-new"), MessageKind::Finding);
}

TEST(ValidationMessages, PerformanceAndSynchronizationFindingsFail) {
  EXPECT_EQ(classify(kInfo, kPerformance, "UNASSIGNED-BestPractices-vkAllocateMemory-small"),
            MessageKind::Finding);
  EXPECT_EQ(classify(kInfo, kValidation, "SYNC-HAZARD-WRITE-AFTER-READ"), MessageKind::Finding);
  EXPECT_EQ(classify(kError, kValidation, "SYNC-HAZARD-READ-AFTER-WRITE"), MessageKind::Finding);
}

TEST(ValidationMessages, UnknownInformationFails) {
  EXPECT_EQ(classify(kInfo, kValidation, "UNASSIGNED-something-new"), MessageKind::Finding);
  EXPECT_EQ(classify(kInfo, kValidation, ""), MessageKind::Finding);
}

// A first run where the layer has never run: HOME and XDG_CACHE_HOME point at a new, empty
// directory. The device comes up with validation and goes down again without a finding.
TEST(TestDeviceFreshMachine, FirstRunHasNoFinding) {
  char pattern[] = "/tmp/staging-fresh-home-XXXXXX";
  const char* home = mkdtemp(pattern);
  ASSERT_NE(home, nullptr);
  setenv("HOME", home, 1);
  setenv("XDG_CACHE_HOME", (std::string(home) + "/.cache").c_str(), 1);
  std::vector<std::string> findings;
  bool validation = false;
  std::string skipped;
  {
    Failure failure;
    auto device = TestDevice::create(
        {.application = "staging-test-vulkan-support",
         .validation = Validation::Auto,
         .api_version = VK_API_VERSION_1_2,
         .on_finding = [&](const Message& m) { findings.push_back(m.id + ": " + m.text); }},
        failure);
    if (!device) {
      ASSERT_FALSE(failure.broken) << failure.reason;
      skipped = failure.reason;
    } else {
      validation = device->validation();
      std::string notes;
      for (const std::string& id : device->set_up_ids())
        notes += (notes.empty() ? "" : ", ") + id;
      std::printf("[vulkan] %s, validation %s; set-up notes passed: %s\n",
                  device->describe().c_str(), device->validation_state().c_str(),
                  notes.empty() ? "none" : notes.c_str());
      device.reset();  // messages at destruction (the layer writes its cache) count too
    }
  }
  for (const std::string& f : findings)
    ADD_FAILURE() << "finding: " << f;
  std::filesystem::remove_all(home);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
  if (!validation) GTEST_SKIP() << "VK_LAYER_KHRONOS_validation is not installed";
  EXPECT_TRUE(findings.empty());
}

}  // namespace
}  // namespace staging::vulkan::support
