// A parsed YAML document as a plain tree with source positions, so that config validation can
// report FILE:LINE:COL for every problem. libyaml does the parsing; this owns no libyaml state.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace safe::yaml {

struct Mark {
  int line = 0;    // 1-based
  int column = 0;  // 1-based
};

struct Entry;

struct Node {
  enum class Kind { scalar, sequence, mapping };
  Kind kind = Kind::scalar;
  Mark mark;
  std::string value;     // scalars only
  bool plain = true;     // scalar written without quotes (so `8` is a number, `"8"` a string)
  std::vector<Node> items;                    // sequences
  std::vector<Entry> entries;  // mappings, in file order

  bool is_null() const { return kind == Kind::scalar && plain && (value.empty() || value == "~" || value == "null"); }
  std::string_view kind_name() const;
};

struct Entry {
  Node key;
  Node value;
};

struct ParseError {
  Mark mark;
  std::string message;
};

// Parses exactly one document. An empty input yields an empty mapping. Duplicate keys within a
// mapping are reported as errors (libyaml accepts them silently, which would hide typos).
struct ParseResult {
  std::optional<Node> root;
  std::vector<ParseError> errors;
};
ParseResult parse(std::string_view text);

}  // namespace safe::yaml
