#include "common/yaml_document.hpp"

#include <yaml.h>

#include <set>

namespace safe::yaml {

std::string_view Node::kind_name() const {
  switch (kind) {
    case Kind::scalar: return is_null() ? "an empty value" : "a scalar";
    case Kind::sequence: return "a list";
    case Kind::mapping: return "a mapping";
  }
  return "?";
}

namespace {

Mark mark_of(const yaml_mark_t& m) { return {static_cast<int>(m.line) + 1, static_cast<int>(m.column) + 1}; }

class TreeBuilder {
 public:
  TreeBuilder(yaml_document_t* doc, std::vector<ParseError>& errors) : doc_(doc), errors_(errors) {}

  Node build(yaml_node_t* n, int depth) {
    Node out;
    out.mark = mark_of(n->start_mark);
    if (depth > kMaxDepth) {
      errors_.push_back({out.mark, "nesting deeper than 64 levels"});
      return out;
    }
    switch (n->type) {
      case YAML_SCALAR_NODE:
        out.kind = Node::Kind::scalar;
        out.value.assign(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
        out.plain = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        break;
      case YAML_SEQUENCE_NODE:
        out.kind = Node::Kind::sequence;
        for (auto* it = n->data.sequence.items.start; it < n->data.sequence.items.top; ++it)
          out.items.push_back(build(yaml_document_get_node(doc_, *it), depth + 1));
        break;
      case YAML_MAPPING_NODE: {
        out.kind = Node::Kind::mapping;
        std::set<std::string> seen;
        for (auto* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p) {
          Node key = build(yaml_document_get_node(doc_, p->key), depth + 1);
          Node value = build(yaml_document_get_node(doc_, p->value), depth + 1);
          if (key.kind != Node::Kind::scalar) {
            errors_.push_back({key.mark, "mapping keys must be plain names"});
            continue;
          }
          if (!seen.insert(key.value).second) {
            errors_.push_back({key.mark, "duplicate key '" + key.value + "'"});
            continue;
          }
          out.entries.push_back(Entry{std::move(key), std::move(value)});
        }
        break;
      }
      default:
        break;
    }
    return out;
  }

 private:
  static constexpr int kMaxDepth = 64;
  yaml_document_t* doc_;
  std::vector<ParseError>& errors_;
};

}  // namespace

ParseResult parse(std::string_view text) {
  ParseResult result;
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    result.errors.push_back({{1, 1}, "cannot initialise the YAML parser (out of memory)"});
    return result;
  }
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());

  yaml_document_t doc;
  if (!yaml_parser_load(&parser, &doc)) {
    std::string msg = "YAML syntax error: ";
    msg += parser.problem ? parser.problem : "unknown problem";
    if (parser.context) msg += std::string(" ") + parser.context;
    result.errors.push_back({mark_of(parser.problem_mark), msg});
    yaml_parser_delete(&parser);
    return result;
  }

  if (yaml_node_t* root = yaml_document_get_root_node(&doc)) {
    TreeBuilder builder(&doc, result.errors);
    result.root = builder.build(root, 0);
    // A second document in the same stream is almost certainly a mistake (a stray `---`).
    yaml_document_t next;
    if (yaml_parser_load(&parser, &next)) {
      if (yaml_document_get_root_node(&next))
        result.errors.push_back({mark_of(next.start_mark), "only one YAML document is allowed (found a second '---')"});
      yaml_document_delete(&next);
    }
  } else {
    Node empty;
    empty.kind = Node::Kind::mapping;
    empty.mark = {1, 1};
    result.root = empty;
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return result;
}

}  // namespace safe::yaml
