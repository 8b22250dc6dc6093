// JSON text from bytes: invalid UTF-8 becomes U+FFFD, so no field is ever dropped.
#include "common/json_utf8.hpp"

#include <gtest/gtest.h>

#include "controller/safed/status_report.hpp"

namespace safe {
namespace {

TEST(JsonUtf8, ValidTextIsUnchanged) {
  EXPECT_EQ("train-\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", valid_utf8("train-\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  EXPECT_EQ(std::string("a\0b", 3), valid_utf8(std::string("a\0b", 3)));
}

TEST(JsonUtf8, InvalidSequencesBecomeReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ("x" + r + "y", valid_utf8("x\xFFy"));
  EXPECT_EQ(r + r, valid_utf8("\xC0\xAF")) << "overlong '/'";
  EXPECT_EQ(r + r + r, valid_utf8("\xED\xA0\x80")) << "a surrogate";
  EXPECT_EQ(r + r + r + r, valid_utf8("\xF4\x90\x80\x80")) << "above U+10FFFF";
  EXPECT_EQ("ab" + r + r, valid_utf8("ab\xE2\x82")) << "truncated at the end";
}

TEST(JsonUtf8, AJsonStringIsAlwaysMade) {
  json_t* s = json_utf8("job-\xFF\xFE");
  ASSERT_NE(nullptr, s) << "json_string() alone returns NULL here, and the field vanishes";
  EXPECT_EQ("job-\xEF\xBF\xBD\xEF\xBF\xBD", std::string(json_string_value(s)));
  json_decref(s);
}

TEST(JsonUtf8, AJobWithANonUtf8NameKeepsItsNameInSafedsApi) {
  StateStore store(":memory:");
  JobRecord j;
  j.job_id = 7;
  j.name = "r\xE9sum\xE9";  // Latin-1
  store.put_job(j);
  std::string body = render_job_json(store, 7, std::nullopt, std::nullopt);
  json_t* doc = json_loads(body.c_str(), 0, nullptr);
  ASSERT_NE(nullptr, doc) << body;
  const char* name = json_string_value(json_object_get(doc, "name"));
  ASSERT_NE(nullptr, name) << body;
  EXPECT_EQ("r\xEF\xBF\xBDsum\xEF\xBF\xBD", std::string(name));
  json_decref(doc);
}

}  // namespace
}  // namespace safe
