// Log lines carry no raw control byte whatever a request held (common/include/oc/common/log.h):
// the line writer escapes C0 controls and DEL, and LogField makes a request's bytes a single
// unambiguous key=value field.
#include "oc/common/log.h"

#include <gtest/gtest.h>

#include <string>

namespace oc {
namespace {

TEST(LogField, EveryByteOutsideVisibleAsciiIsEscaped) {
  for (int b = 0; b < 256; ++b) {
    const std::string in(1, static_cast<char>(b));
    const std::string out = LogField(in);
    SCOPED_TRACE(b);
    const bool plain = b >= 0x21 && b <= 0x7E && b != '\\' && b != '"' && b != '=';
    if (plain) {
      EXPECT_EQ(out, in);
    } else {
      EXPECT_EQ(out, fmt::format("\\x{:02x}", b));
    }
  }
  EXPECT_EQ(LogField("my bucket=x\n"), "my\\x20bucket\\x3dx\\x0a");
}

TEST(LogLine, ControlBytesInTheTextAreWrittenEscaped) {
  const Logger log{"test"};
  std::string text = "key=";
  for (int b = 0; b < 0x20; ++b) {
    text.push_back(static_cast<char>(b));
  }
  text +=
      "\x7F"
      "end";
  ::testing::internal::CaptureStderr();
  log.Warn("{}", text);
  const std::string line = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    EXPECT_TRUE(c >= 0x20 && c != 0x7F) << "raw byte " << int(c) << " at " << i;
  }
  EXPECT_NE(line.find("key=\\x00\\x01"), std::string::npos) << line;
  EXPECT_NE(line.find("\\x0a"), std::string::npos);
  EXPECT_NE(line.find("\\x1f\\x7fend"), std::string::npos) << line;
}

}  // namespace
}  // namespace oc
