#include "controller/safed/etcd_journal.hpp"

#include <cstdio>
#include <cstdlib>

#include "common/base64.hpp"
#include "common/json_value.hpp"

namespace safe {
namespace {

std::string b64(const std::string& s) { return base64_encode(s); }

std::string padded(long long n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%020lld", n);
  return buf;
}

// A kv's key and value, decoded; false when the answer is not what etcd writes.
bool decode_kv(const json_t* kv, std::string& key, std::string& value) {
  auto k = base64_decode(json_string_or(kv, "key"), Base64::standard);
  auto v = base64_decode(json_string_or(kv, "value"), Base64::standard);
  if (!k || !v) return false;
  key = std::move(*k);
  value = std::move(*v);
  return true;
}


}  // namespace

EtcdJournal::EtcdJournal(EtcdClient& etcd, std::string prefix, std::size_t part_bytes)
    : etcd_(etcd), prefix_(std::move(prefix)), part_bytes_(part_bytes) {}

std::string EtcdJournal::entry_key(long long seq) const { return prefix_ + "/journal/" + padded(seq); }

Status EtcdJournal::append(long long seq, const std::string& changeset) {
  if (!token_) return Error{"this safed is not the active one"};
  // The entry's value: 'c' and the changeset, or 'p', the token and the number of parts.
  std::string value;
  if (changeset.size() <= part_bytes_) {
    value = "c" + changeset;
  } else {
    long long parts = 0;
    for (std::size_t at = 0; at < changeset.size(); at += part_bytes_, ++parts) {
      std::string key = prefix_ + "/journal-part/" + padded(seq) + "/" + std::to_string(token_) + "/" + padded(parts);
      auto put = etcd_.post("/v3/kv/put", "{\"key\":\"" + b64(key) + "\",\"value\":\"" +
                                              b64(changeset.substr(at, part_bytes_)) + "\"}");
      if (!put) return Error{"journal entry " + std::to_string(seq) + " part " + std::to_string(parts) + ": " + put.error()};
    }
    value = "p" + std::to_string(token_) + " " + std::to_string(parts);
  }
  std::string entry = b64(entry_key(seq));
  std::string body = "{\"compare\":[{\"key\":\"" + b64(leader_key()) +
                     "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"" + std::to_string(token_) +
                     "\"},{\"key\":\"" + entry + "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],"
                     "\"success\":[{\"requestPut\":{\"key\":\"" + entry + "\",\"value\":\"" + b64(value) + "\"}}]}";
  auto answer = etcd_.post("/v3/kv/txn", body);
  if (!answer) return Error{answer.error()};
  auto j = parse_etcd_answer(*answer);
  if (!j) return Error{j.error()};
  if (!json_is_true(json_object_get(j->get(), "succeeded")))
    return Error{"fenced: " + leader_key() + " is no longer this safed's (token " + std::to_string(token_) +
                 "), or entry " + std::to_string(seq) + " exists: another safed is active"};
  return ok_status();
}

Result<std::string> EtcdJournal::read_parts(long long seq, long long token, long long count) {
  std::string dir = prefix_ + "/journal-part/" + padded(seq) + "/" + std::to_string(token) + "/";
  std::string out;
  long long got = 0;
  std::string from = dir;
  // A page at a time: each part is up to part_bytes_, an answer must stay under etcd's limits.
  while (got < count) {
    auto answer = etcd_.post("/v3/kv/range", "{\"key\":\"" + b64(from) + "\",\"range_end\":\"" + b64(prefix_range_end(dir)) +
                                                 "\",\"limit\":\"1\"}");
    if (!answer) return Error{answer.error()};
    auto j = parse_etcd_answer(*answer);
    if (!j) return Error{j.error()};
    const json_t* kv = json_array_get(json_object_get(j->get(), "kvs"), 0);
    std::string key, value;
    if (!kv || !decode_kv(kv, key, value) || key != dir + padded(got))
      return Error{"journal entry " + std::to_string(seq) + ": part " + std::to_string(got) + " missing"};
    out += value;
    from = key + '\0';
    ++got;
  }
  return out;
}

Result<std::vector<std::pair<long long, std::string>>> EtcdJournal::entries_after(long long seq, int limit) {
  std::string dir = prefix_ + "/journal/";
  auto answer = etcd_.post("/v3/kv/range", "{\"key\":\"" + b64(entry_key(seq + 1)) + "\",\"range_end\":\"" +
                                               b64(prefix_range_end(dir)) + "\",\"limit\":\"" + std::to_string(limit) + "\"}");
  if (!answer) return Error{answer.error()};
  auto j = parse_etcd_answer(*answer);
  if (!j) return Error{j.error()};
  std::vector<std::pair<long long, std::string>> out;
  std::size_t i;
  const json_t* kv;
  json_array_foreach(json_object_get(j->get(), "kvs"), i, kv) {
    std::string key, value;
    if (!decode_kv(kv, key, value) || key.size() <= dir.size() || value.empty())
      return Error{"a journal entry etcd returned cannot be read"};
    long long n = std::strtoll(key.c_str() + dir.size(), nullptr, 10);
    if (value[0] == 'c') {
      out.emplace_back(n, value.substr(1));
      continue;
    }
    long long token = 0, parts = 0;
    if (value[0] != 'p' || std::sscanf(value.c_str() + 1, "%lld %lld", &token, &parts) != 2)
      return Error{"journal entry " + std::to_string(n) + " has an unknown form"};
    auto whole = read_parts(n, token, parts);
    if (!whole) return Error{whole.error()};
    out.emplace_back(n, std::move(*whole));
  }
  return out;
}

}  // namespace safe
