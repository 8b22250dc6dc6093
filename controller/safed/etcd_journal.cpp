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

std::string EtcdJournal::parts_dir(long long seq, long long token) const {
  return prefix_ + "/journal-part/" + padded(seq) + "/" + std::to_string(token) + "/";
}

Result<long long> EtcdJournal::write_parts(long long seq, const std::string& data) {
  long long parts = 0;
  std::size_t at = 0;
  do {
    std::string key = parts_dir(seq, token_) + padded(parts);
    auto put = etcd_.post("/v3/kv/put", "{\"key\":\"" + b64(key) + "\",\"value\":\"" +
                                            b64(data.substr(at, part_bytes_)) + "\"}");
    if (!put) return Error{"journal entry " + std::to_string(seq) + " part " + std::to_string(parts) + ": " + put.error()};
    at += part_bytes_;
    ++parts;
  } while (at < data.size());
  return parts;
}

Status EtcdJournal::fenced_put(long long seq, const std::string& value, const std::string& more) {
  std::string entry = b64(entry_key(seq));
  std::string body = "{\"compare\":[{\"key\":\"" + b64(leader_key()) +
                     "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"" + std::to_string(token_) +
                     "\"},{\"key\":\"" + entry + "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],"
                     "\"success\":[{\"requestPut\":{\"key\":\"" + entry + "\",\"value\":\"" + b64(value) + "\"}}" + more + "]}";
  auto answer = etcd_.post("/v3/kv/txn", body);
  if (!answer) return Error{answer.error()};
  auto j = parse_etcd_answer(*answer);
  if (!j) return Error{j.error()};
  if (!json_is_true(json_object_get(j->get(), "succeeded")))
    return Error{"fenced: " + leader_key() + " is no longer this safed's (token " + std::to_string(token_) +
                 "), or entry " + std::to_string(seq) + " exists: another safed is active"};
  return ok_status();
}

Status EtcdJournal::append(long long seq, const std::string& changeset) {
  if (!token_) return Error{"this safed is not the active one"};
  // The entry's value: 'c' and the changeset, or 'p', the token and the number of parts.
  if (changeset.size() <= part_bytes_) return fenced_put(seq, "c" + changeset);
  auto parts = write_parts(seq, changeset);
  if (!parts) return Error{parts.error()};
  return fenced_put(seq, "p" + std::to_string(token_) + " " + std::to_string(*parts));
}

Status EtcdJournal::append_snapshot(long long seq, const std::string& image) {
  if (!token_) return Error{"this safed is not the active one"};
  // 's', the token and the number of parts; with it, every entry before it and their parts go.
  auto parts = write_parts(seq, image);
  if (!parts) return Error{parts.error()};
  auto drop = [](const std::string& from, const std::string& to) {
    return ",{\"requestDeleteRange\":{\"key\":\"" + b64(from) + "\",\"range_end\":\"" + b64(to) + "\"}}";
  };
  std::string journal = prefix_ + "/journal/", staged = prefix_ + "/journal-part/";
  return fenced_put(seq, "s" + std::to_string(token_) + " " + std::to_string(*parts),
                    drop(journal, entry_key(seq)) + drop(staged, staged + padded(seq)));
}

Result<Json> EtcdJournal::range(const std::string& from, const std::string& to, int limit, bool keys_only,
                                 long long revision) {
  auto answer = etcd_.post("/v3/kv/range", "{\"key\":\"" + b64(from) + "\",\"range_end\":\"" + b64(to) +
                                               "\",\"limit\":\"" + std::to_string(limit) + "\"" +
                                               (revision ? ",\"revision\":\"" + std::to_string(revision) + "\"" : "") +
                                               (keys_only ? ",\"keys_only\":true}" : "}"));
  if (!answer) return Error{answer.error()};
  return parse_etcd_answer(*answer);
}

Result<std::optional<long long>> EtcdJournal::oldest_seq() {
  std::string dir = prefix_ + "/journal/";
  auto j = range(dir, prefix_range_end(dir), 1, true);
  if (!j) return Error{j.error()};
  const json_t* kv = json_array_get(json_object_get(j->get(), "kvs"), 0);
  if (!kv) return std::optional<long long>{};
  auto key = base64_decode(json_string_or(kv, "key"), Base64::standard);
  if (!key || key->size() <= dir.size()) return Error{"a journal entry etcd returned cannot be read"};
  return std::optional<long long>{std::strtoll(key->c_str() + dir.size(), nullptr, 10)};
}

Result<std::string> EtcdJournal::read_parts(long long seq, long long token, long long count, long long revision) {
  std::string dir = parts_dir(seq, token);
  std::string out;
  long long got = 0;
  std::string from = dir;
  // A page at a time: each part is up to part_bytes_, an answer must stay under etcd's limits.
  while (got < count) {
    auto j = range(from, prefix_range_end(dir), 1, false, revision);
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

Result<std::vector<JournalEntry>> EtcdJournal::entries_after(long long seq, int limit) {
  std::string dir = prefix_ + "/journal/";
  auto j = range(entry_key(seq + 1), prefix_range_end(dir), limit);
  if (!j) return Error{j.error()};
  // The parts are read as of the entries' revision: a snapshot written meanwhile drops them, but
  // etcd keeps them in its history until it compacts that.
  long long revision = std::atoll(json_string_or(json_object_get(j->get(), "header"), "revision").c_str());
  std::vector<JournalEntry> out;
  std::size_t i;
  const json_t* kv;
  json_array_foreach(json_object_get(j->get(), "kvs"), i, kv) {
    std::string key, value;
    if (!decode_kv(kv, key, value) || key.size() <= dir.size() || value.empty())
      return Error{"a journal entry etcd returned cannot be read"};
    long long n = std::strtoll(key.c_str() + dir.size(), nullptr, 10);
    if (value[0] == 'c') {
      out.push_back({n, false, value.substr(1)});
      continue;
    }
    long long token = 0, parts = 0;
    if ((value[0] != 'p' && value[0] != 's') || std::sscanf(value.c_str() + 1, "%lld %lld", &token, &parts) != 2)
      return Error{"journal entry " + std::to_string(n) + " has an unknown form"};
    auto whole = read_parts(n, token, parts, revision);
    if (!whole) return Error{whole.error()};
    out.push_back({n, value[0] == 's', std::move(*whole)});
  }
  return out;
}

}  // namespace safe
