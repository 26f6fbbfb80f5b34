// staging-sim's parsers: sizes, durations, delay models and upload traces (CSV and JSON) —
// what they accept, and that hostile input (huge or malformed numbers, hex, exponents, a file cut
// short, binary garbage, a million kinds) is refused with a message that names the place, or
// parsed in time proportional to its length.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "delay_spec.hpp"
#include "trace_replay.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

using namespace std::chrono_literals;

TEST(Units, ParsesByteCountsWithBinaryAndDecimalSuffixes) {
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("64KiB"), 64u << 10);
  EXPECT_EQ(parse_bytes("64K"), 64u << 10);
  EXPECT_EQ(parse_bytes("32MiB"), uint64_t{32} << 20);
  EXPECT_EQ(parse_bytes("1.5MiB"), uint64_t{3} << 19);
  EXPECT_EQ(parse_bytes("2GB"), uint64_t{2000000000});
  EXPECT_EQ(parse_bytes("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parse_bytes("18446744073709551616"));  // overflows
  EXPECT_FALSE(parse_bytes(""));
  EXPECT_FALSE(parse_bytes("MiB"));
  EXPECT_FALSE(parse_bytes("12 parsecs"));
  EXPECT_FALSE(parse_bytes("-4"));
}

TEST(Units, ParsesDurationsOnlyWithAUnit) {
  EXPECT_EQ(parse_duration("2ms"), 2ms);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("250us"), 250us);
  EXPECT_EQ(parse_duration("16.667ms"), 16667us);
  EXPECT_EQ(parse_duration("7ns"), 7ns);
  EXPECT_FALSE(parse_duration("100"));  // no unit
  EXPECT_FALSE(parse_duration("1e30s"));
}

TEST(Units, ParsesMinutesAndHours) {
  EXPECT_EQ(parse_duration("1h"), 3600s);
  EXPECT_EQ(parse_duration("0.5h"), 30min);
  EXPECT_EQ(parse_duration("1.5min"), 90s);
  EXPECT_EQ(parse_duration("2 min"), 120s);
  EXPECT_FALSE(parse_duration("1m"));  // minutes or metres: no such unit
  EXPECT_FALSE(parse_duration("1hr"));
  EXPECT_FALSE(parse_duration("1H"));
  // The same limit as every other unit: 2^60 ns is about 320,255 hours.
  EXPECT_TRUE(parse_duration("320255h"));
  EXPECT_FALSE(parse_duration("320256h"));
  EXPECT_TRUE(parse_duration("19215358min"));
  EXPECT_FALSE(parse_duration("19215359min"));
}

TEST(Units, FormatsForPeople) {
  EXPECT_EQ(format_bytes(17), "17 B");
  EXPECT_EQ(format_bytes(32u << 20), "32 MiB");
  EXPECT_EQ(format_bytes(3u << 19), "1.50 MiB");
  EXPECT_EQ(format_duration(0ms), "0 s");
  EXPECT_EQ(format_duration(12300us), "12.3 ms");
  EXPECT_EQ(format_count(1234567), "1,234,567");
}

TEST(DelaySpec, ParsesEveryModelAndNamesTheMistake) {
  std::string error;
  auto fixed = parse_delay("fixed:2ms", 1, &error);
  ASSERT_TRUE(fixed);
  EXPECT_EQ(fixed->model.kind, testing::DelayModel::Kind::Fixed);
  EXPECT_EQ(fixed->model.base, 2ms);
  auto random = parse_delay("random:1ms:6ms", 9, &error);
  ASSERT_TRUE(random);
  EXPECT_EQ(random->model.seed, 9u);
  EXPECT_EQ(random->text, "random:1ms:6ms");
  auto bursty = parse_delay("bursty:1ms:30ms:8", 1, &error);
  ASSERT_TRUE(bursty);
  EXPECT_EQ(bursty->model.burst, 8u);
  EXPECT_TRUE(parse_delay("stalled", 1, &error));
  EXPECT_FALSE(parse_delay("random:6ms:1ms", 1, &error));
  EXPECT_NE(error.find("LO <= HI"), std::string::npos);
  EXPECT_FALSE(parse_delay("gaussian:1ms", 1, &error));
  EXPECT_NE(error.find("fixed, random, bursty, stalled"), std::string::npos);
}

TEST(TraceReplay, CsvWithHeaderCommentsAndOptionalColumns) {
  const char* text =
      "# captured from a test\n"
      "time_us,size,alignment,kind,frame,granularity\n"
      "0,65536,256,constants,0,1\n"
      "\n"
      "1500.5,4096,,vertices,,\n"
      "20,1048576,512,texture,1,4096\n";
  auto w = parse_trace(text, "t.csv");
  ASSERT_TRUE(w) << w.error();
  ASSERT_EQ(w->uploads.size(), 3u);
  // Sorted by time: the texture at 20 us comes before the upload at 1500.5 us.
  EXPECT_EQ(w->uploads[1].time, 20us);
  EXPECT_EQ(w->uploads[1].granularity, 4096u);
  EXPECT_EQ(w->uploads[2].time, Duration{1500500});
  EXPECT_EQ(w->uploads[2].alignment, 1u);
  EXPECT_EQ(w->uploads[2].frame, -1);
  EXPECT_EQ(w->kinds[w->uploads[2].kind], "vertices");
}

TEST(TraceReplay, CsvErrorsNameTheLine) {
  auto bad = parse_trace("time_us,size\n0,100\n5,0\n", "t.csv");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("t.csv:3:"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("size"), std::string::npos);
  auto column = parse_trace("time_us,size,colour\n", "t.csv");
  ASSERT_FALSE(column);
  EXPECT_NE(column.error().find("unknown column 'colour'"), std::string::npos);
  auto no_time = parse_trace("size\n5\n", "t.csv");
  ASSERT_FALSE(no_time);
  auto empty = parse_trace("time_us,size\n", "t.csv");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().find("no uploads"), std::string::npos);
}

TEST(TraceReplay, JsonObjectWithStallsOrBareArray) {
  auto w = parse_trace(
      R"({"uploads": [{"time_us": 10, "size": 64, "alignment": 4, "kind": "a", "frame": 2},
                      {"time_ms": 1, "size": 8, "frame": null}],
          "stalls": [{"at_us": 500, "for_us": 250}]})",
      "t.json");
  ASSERT_TRUE(w) << w.error();
  ASSERT_EQ(w->uploads.size(), 2u);
  EXPECT_EQ(w->uploads[0].frame, 2);
  EXPECT_EQ(w->uploads[1].time, 1ms);
  EXPECT_EQ(w->uploads[1].frame, -1);
  ASSERT_EQ(w->stalls.size(), 1u);
  EXPECT_EQ(w->stalls[0].length, 250us);
  auto bare = parse_trace(R"([{"time_us": 0, "size": 1}])", "t.json");
  ASSERT_TRUE(bare) << bare.error();
  auto bad = parse_trace(R"([{"time_us": 0, "size": -1}])", "t.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("upload 0"), std::string::npos);
  auto typo = parse_trace(R"([{"time_us": 0, "sise": 1}])", "t.json");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().find("unknown key 'sise'"), std::string::npos);
}

TEST(Units, RefusesWhatIsNotAPlainDecimal) {
  EXPECT_FALSE(parse_bytes("0x10"));
  EXPECT_FALSE(parse_bytes("1e3"));
  EXPECT_FALSE(parse_bytes("1.5.2K"));
  EXPECT_FALSE(parse_duration("1e3ms"));
  EXPECT_FALSE(parse_duration("0x10s"));
  EXPECT_FALSE(parse_duration("-1s"));
  EXPECT_FALSE(parse_duration("1.s"));
  EXPECT_EQ(parse_duration(".5s"), 500ms);
  // The limit on every input time: 2^60 ns is accepted, one more is not.
  EXPECT_EQ(parse_duration("1152921504606846976ns"), kTimeLimit);
  EXPECT_FALSE(parse_duration("1152921504606846977ns"));
  EXPECT_FALSE(parse_duration("100000000000s"));
}

TEST(Units, SaturatingSumsAndQuotedText) {
  EXPECT_EQ(add_sat(UINT64_MAX - 1, 5), UINT64_MAX);
  EXPECT_EQ(add_sat(Duration::max(), 1ns), Duration::max());
  EXPECT_EQ(add_sat(2ns, 3ns), 5ns);
  EXPECT_EQ(quote("abc"), "'abc'");
  EXPECT_EQ(quote(std::string("a\0\xff\n", 4)), "'a\\x00\\xff\\x0a'");
  EXPECT_EQ(quote(std::string(100, 'x')), "'" + std::string(40, 'x') + "'...");
}

// Each of these was accepted (or misread) once; each names the line and what is wrong.
TEST(TraceReplay, CsvRefusesMalformedNumbers) {
  const struct {
    const char* row;
    const char* says;
  } cases[] = {
      {"0x10,5", "time_us must be"},                 // hex read as a time
      {"1e3,5", "time_us must be"},                  // exponent
      {"-1,5", "time_us must be"},                   // negative
      {"3000000000000000000,5", "time_us must be"},  // beyond 36 years
      {"0,18446744073709551616", "size must be"},    // 2^64
      {"0,1.5", "size must be"},
      {"0,0", "size must be"},
      {"0,5,0", "alignment must be"},
      {"0,5,1,9223372036854775808", "frame must be"},  // 2^63
      {"0,5,1,-2", "frame must be"},
  };
  for (const auto& c : cases) {
    const std::string text = std::string("time_us,size,alignment,frame\n") + c.row + "\n";
    auto w = parse_trace(text, "t.csv");
    ASSERT_FALSE(w) << c.row;
    EXPECT_EQ(w.error().rfind("t.csv:2: ", 0), 0u) << w.error();
    EXPECT_NE(w.error().find(c.says), std::string::npos) << w.error();
  }
  auto top = parse_trace("time_us,size,frame\n0,18446744073709551615,9223372036854775807\n", "t");
  ASSERT_TRUE(top) << top.error();
  EXPECT_EQ(top->uploads[0].size, UINT64_MAX);
  EXPECT_EQ(top->uploads[0].frame, INT64_MAX);
}

TEST(TraceReplay, CsvRefusesAFileCutInTheMiddleOfALine) {
  // "0,4096\n" cut after "0,40": the partial number must not be replayed as a size of 40.
  auto cut = parse_trace("time_us,size\n0,40", "t.csv");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().find("t.csv:2: the last line has no newline"), std::string::npos)
      << cut.error();
  EXPECT_TRUE(parse_trace("time_us,size\n0,40\n# a comment without a newline", "t.csv"));
}

TEST(TraceReplay, BinaryGarbageGetsAShortPrintableMessage) {
  std::string garbage = "\xf3\x91\xd1\x01\x02\x1b[2J";
  for (int i = 0; i < 500; ++i)
    garbage.push_back(static_cast<char>(0x80 + i % 100));
  for (const std::string& text : {garbage + "\n", "[" + garbage, "{\"" + garbage + "\": 1}"}) {
    auto w = parse_trace(text, "g.bin");
    ASSERT_FALSE(w);
    EXPECT_LT(w.error().size(), 300u) << w.error();
    for (char c : w.error()) {
      EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "unprintable byte in: " << w.error();
    }
  }
}

TEST(TraceReplay, JsonRefusesNumbersThatDoNotFit) {
  const struct {
    const char* upload;
    const char* says;
  } cases[] = {
      {R"({"time_us": 0, "size": 1, "frame": 18446744073709551615})", "frame must be"},
      {R"({"time_us": 0, "size": 1, "frame": 9223372036854775808})", "frame must be"},
      {R"({"time_us": 0, "size": 1, "frame": -2})", "frame must be"},
      {R"({"time_us": 0, "size": 1, "frame": 1.5})", "frame must be"},
      {R"({"time_us": 0, "size": 18446744073709551616})", "size must be"},
      {R"({"time_us": 0, "size": 1e3})", "size must be"},
      {R"({"time_us": 0, "size": "64"})", "size must be"},
      {R"({"time_us": 1e30, "size": 1})", "time_us must be"},
      {R"({"time_us": -1, "size": 1})", "time_us must be"},
      {R"({"time_ns": 18446744073709551615, "size": 1})", "time_ns must be"},
      {R"({"time_us": 0, "time_ms": 0, "size": 1})", "more than one time key"},
      {R"({"time_us": 0, "size": 1, "kind": ""})", "kind must be"},
  };
  for (const auto& c : cases) {
    auto w = parse_trace(std::string("[") + c.upload + "]", "t.json");
    ASSERT_FALSE(w) << c.upload;
    EXPECT_EQ(w.error().rfind("t.json: upload 0: ", 0), 0u) << w.error();
    EXPECT_NE(w.error().find(c.says), std::string::npos) << w.error();
  }
  // A number no double holds: refused, not thrown.
  auto huge = parse_trace(R"([{"time_us": 1e400, "size": 1}])", "t.json");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().find("a number out of range"), std::string::npos) << huge.error();
  auto top = parse_trace(R"([{"time_us": 1.5, "size": 1, "frame": 9223372036854775807}])", "t");
  ASSERT_TRUE(top) << top.error();
  EXPECT_EQ(top->uploads[0].frame, INT64_MAX);
  EXPECT_EQ(top->uploads[0].time, 1500ns);
}

TEST(TraceReplay, JsonStallsMustFit) {
  // at_us 1e30 once dereferenced an empty optional; for_us 1e30 made the stall vanish.
  for (const char* stall : {R"({"at_us": 1e30, "for_us": 1})", R"({"at_us": 0, "for_us": 1e30})",
                            R"({"at_us": -5, "for_us": 1})", R"({"at_us": 0})",
                            R"({"at_us": 0, "for_us": 1, "extra": 2})", "[0, 1]"}) {
    auto w = parse_trace(
        std::string(R"({"uploads": [{"time_us": 0, "size": 1}], "stalls": [)") + stall + "]}",
        "t.json");
    ASSERT_FALSE(w) << stall;
    EXPECT_NE(w.error().find("t.json: stall 0: "), std::string::npos) << w.error();
  }
  auto w = parse_trace(R"({"uploads": [{"time_us": 0, "size": 1}], "extra": 1})", "t.json");
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().find("unexpected 'extra'"), std::string::npos) << w.error();
}

// A kind per upload: a hash lookup each, not a search of every kind so far.
TEST(TraceReplay, AMillionKindsParseInLinearTime) {
  std::string text = "time_us,size,kind\n";
  constexpr int kUploads = 1000000;
  for (int i = 0; i < kUploads; ++i)
    text += std::to_string(i) + ",64,k" + std::to_string(i) + "\n";
  const auto start = std::chrono::steady_clock::now();
  auto w = parse_trace(text, "kinds.csv");
  ASSERT_TRUE(w) << w.error();
  EXPECT_EQ(w->kinds.size(), static_cast<std::size_t>(kUploads));
  EXPECT_EQ(w->kinds[w->uploads.back().kind], "k999999");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

}  // namespace
}  // namespace staging::sim
