// The command-line helpers the tools share (tools/support): the closest option to a typo, and the
// up-front checks of input and output paths (the system's reason named, nothing left behind).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "did_you_mean.hpp"
#include "io_paths.hpp"

namespace {

namespace fs = std::filesystem;
using staging::tools::closest;
using staging::tools::edit_distance;

TEST(DidYouMean, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("--policy", "--policy"), 0u);
  EXPECT_EQ(edit_distance("--polcy", "--policy"), 1u);    // a letter left out
  EXPECT_EQ(edit_distance("--pollicy", "--policy"), 1u);  // one too many
  EXPECT_EQ(edit_distance("--plicy", "--policy"), 1u);
  EXPECT_EQ(edit_distance("--poilcy", "--policy"), 1u);  // two neighbours swapped
  EXPECT_EQ(edit_distance("--palicy", "--policy"), 1u);  // one wrong
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(DidYouMean, SuggestsOnlyWhatIsCloseEnough) {
  const std::vector<std::string> known = {"--policy", "--plot", "--json", "--duration"};
  EXPECT_EQ(closest("--polcy", known), "--policy");
  EXPECT_EQ(closest("--plto", known), "--plot");
  EXPECT_EQ(closest("--durations", known), "--duration");
  EXPECT_EQ(closest("--bogus", known), std::nullopt);
  EXPECT_EQ(closest("--x", {}), std::nullopt);
}

TEST(DidYouMean, NamesTheFirstUnknownOptionWithTheClosestOfAllGroups) {
  CLI::App app{"test", "test"};
  std::string value;
  app.add_option("--policy", value);
  app.add_option_group("more")->add_option("--texture-size", value);
  EXPECT_EQ(staging::tools::unknown_argument_message(app, {"--polcy", "split"}),
            "unknown option --polcy (did you mean --policy?)");
  EXPECT_EQ(staging::tools::unknown_argument_message(app, {"--texture-szie=4"}),
            "unknown option --texture-szie (did you mean --texture-size?)");
  EXPECT_EQ(staging::tools::unknown_argument_message(app, {"stray", "--nothing-like-it"}),
            "unknown option --nothing-like-it");
  EXPECT_EQ(staging::tools::unknown_argument_message(app, {"stray"}),
            "unexpected argument 'stray'");
}

class IoPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("staging-io-paths-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "a-file") << "kept as it was\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  fs::path dir_;
};

TEST_F(IoPaths, AnOutputFileItsFolderTakesIsAcceptedAndNothingIsLeft) {
  EXPECT_EQ(staging::tools::output_file_error(at("new.json")), std::nullopt);
  EXPECT_FALSE(fs::exists(at("new.json")));
  EXPECT_EQ(staging::tools::output_file_error(at("a-file")), std::nullopt);
  std::string kept;
  std::getline(std::ifstream(at("a-file")), kept);
  EXPECT_EQ(kept, "kept as it was");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(IoPaths, AnOutputFileThatCannotBeCreatedNamesThePathAndTheReason) {
  EXPECT_EQ(staging::tools::output_file_error(at("missing/x.json")),
            "'" + at("missing/x.json") + "': cannot create the file: No such file or directory");
  EXPECT_EQ(staging::tools::output_file_error(at("a-file/x.json")),
            "'" + at("a-file/x.json") + "': cannot create the file: Not a directory");
  EXPECT_EQ(staging::tools::output_file_error(dir_.string()),
            "'" + dir_.string() + "': cannot write the file: Is a directory");
  EXPECT_TRUE(staging::tools::output_file_error(""));
}

TEST_F(IoPaths, AnOutputFolderMustExistOrBeCreatable) {
  EXPECT_EQ(staging::tools::output_folder_error(dir_.string()), std::nullopt);
  EXPECT_EQ(staging::tools::output_folder_error(at("new/deeper")), std::nullopt);
  EXPECT_EQ(entries(), 1u);  // nothing created, no probe left
  const auto file = staging::tools::output_folder_error(at("a-file"));
  ASSERT_TRUE(file);
  EXPECT_NE(file->find("Not a directory"), std::string::npos) << *file;
  const auto under = staging::tools::output_folder_error(at("a-file/sub"));
  ASSERT_TRUE(under);
  EXPECT_NE(under->find("Not a directory"), std::string::npos) << *under;
}

TEST_F(IoPaths, AnInputFileMustOpen) {
  EXPECT_EQ(staging::tools::input_file_error(at("a-file")), std::nullopt);
  EXPECT_EQ(staging::tools::input_file_error(at("missing.csv")),
            "'" + at("missing.csv") + "': cannot open: No such file or directory");
  const auto folder = staging::tools::input_file_error(dir_.string());
  ASSERT_TRUE(folder);
  EXPECT_NE(folder->find("Is a directory"), std::string::npos) << *folder;
}

TEST_F(IoPaths, TheValidatorsMakeAUsageErrorOfABadPath) {
  CLI::App app{"test", "test"};
  std::string json;
  app.add_option("--json", json)->check(staging::tools::writable_file());
  const std::string bad = at("missing/x.json");
  const char* argv[] = {"test", "--json", bad.c_str()};
  try {
    app.parse(3, argv);
    FAIL() << "a --json in a missing folder was accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
}

}  // namespace
