// safectl status | jobs | job | node release: ask safed (its /api/v1), and when safed cannot be
// reached, read Slurm directly where that can answer (nodes, SaFE jobs' AdminComment records,
// releasing a quarantine).
#include <curl/curl.h>
#include <jansson.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>

#include "common/authenticator.hpp"
#include "common/config.hpp"
#include "common/job_metadata.hpp"
#include "common/json_utf8.hpp"
#include "common/json_value.hpp"
#include "common/lemon_detection.hpp"
#include "controller/safectl/commands.hpp"
#include "controller/safed/etcd_client.hpp"
#include "controller/safed/failover_planner.hpp"
#include "common/slurm/libslurm.hpp"

namespace po = boost::program_options;

namespace safe::ctl {

std::string default_controller_url(const std::string& config_path) {
  if (const char* u = std::getenv("SAFE_CONTROLLER_URL"); u && *u) return u;
  ConfigResult config = load_config_file(config_path);
  if (config.ok() && config.config->controller.ha.enabled()) {
    auto active = active_controller_url(config.config->controller.ha);
    if (active) return *active;
    std::cerr << "safectl: cannot find the active safed: " << active.error() << "; trying controller.listen\n";
  }
  return "http://" + (config.ok() ? config.config->controller.listen : ControllerConfig{}.listen);
}

size_t collect_http_body(char* data, size_t size, size_t n, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (s->size() + size * n > (64u << 20)) return 0;  // a large site's status: every job in it
  s->append(data, size * n);
  return size * n;
}

namespace {

struct Common {
  std::string url;
  bool json = false;
};

po::options_description common_options(const std::string& title, Common& c) {
  po::options_description opts(title);
  opts.add_options()("help,h", "show this help")("json", po::bool_switch(&c.json), "print JSON for scripts")(
      "url", po::value<std::string>(&c.url), "safed's address (default: $SAFE_CONTROLLER_URL, else controller.listen)");
  return opts;
}


// GET or POST against safed, with a munge credential of the user running safectl (safed shows
// each user their own jobs, admins everything); nullopt when safed cannot be reached. `status`
// gets the HTTP status.
std::optional<std::string> call(const Common& c, const std::string& method, const std::string& path, int& status) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return std::nullopt;
  std::string url = c.url + path, body;
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, curl_slist_free_all);
  if (auto credential = new_munge_credential())
    headers.reset(curl_slist_append(nullptr, ("Authorization: Munge " + *credential).c_str()));
  else
    std::cerr << "safectl: " << credential.error() << "\n";
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 10000L);
  if (headers) curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  if (method == "POST") curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, "");
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect_http_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  if (curl_easy_perform(curl.get()) != CURLE_OK) return std::nullopt;
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  status = static_cast<int>(code);
  return body;
}

// safed answered, but not with what was asked (401: no credential it accepts, 403, 404): says
// what it said.
bool refused(int status, const std::string& body) {
  if (status == 200) return false;
  Json root(json_loads(body.c_str(), 0, nullptr));
  const char* message = root ? json_string_value(json_object_get(root.get(), "error")) : nullptr;
  std::cerr << (message ? std::string(message) : "safectl: safed answered HTTP " + std::to_string(status)) << "\n";
  return true;
}

const char* str(json_t* o, const char* key) {
  const char* s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}
long long num(json_t* o, const char* key) { return json_integer_value(json_object_get(o, key)); }

void note_fallback(const Common& c) {
  std::cerr << "safectl: safed at " << c.url
            << " is not answering; showing what Slurm itself knows (start safed for classifications and history)\n";
}

void print_jobs_table(json_t* jobs) {
  std::printf("%-8s %-16s %-10s %-13s %-8s %s\n", "JOBID", "NAME", "WORKSPACE", "STATE", "RETRIES", "LAST FAILURE");
  std::size_t i;
  json_t* j;
  json_array_foreach(jobs, i, j) {
    std::string last = str(j, "last_class");
    if (!last.empty()) last += " " + std::string(str(j, "last_evidence"));
    std::string retries = std::to_string(num(j, "retries_used")) + "/" + std::to_string(num(j, "max_retries"));
    std::printf("%-8lld %-16.16s %-10.10s %-13s %-8s %s\n", num(j, "job_id"), str(j, "name"),
                *str(j, "workspace") ? str(j, "workspace") : "-", str(j, "state"), retries.c_str(), last.c_str());
  }
}

// SaFE jobs as Slurm shows them (no safed): the AdminComment record.
json_t* jobs_from_slurm(bool all, std::string& error) {
  auto slurm = make_libslurm_client();
  auto jobs = slurm->load_jobs();
  if (!jobs) {
    error = jobs.error();
    return nullptr;
  }
  json_t* arr = json_array();
  for (const auto& job : *jobs) {
    auto meta = parse_job_metadata(job.admin_comment);
    if (!meta) continue;
    bool active = job.state == SlurmJobState::pending || job.state == SlurmJobState::running ||
                  job.state == SlurmJobState::suspended;
    if (!all && !active) continue;
    json_t* o = json_object();
    json_object_set_new(o, "job_id", json_integer(job.id));
    json_object_set_new(o, "name", json_utf8(job.name));
    json_object_set_new(o, "workspace", json_utf8(meta->settings.workspace));
    static const char* kStates[] = {"pending", "running", "suspended", "completed", "cancelled", "failed", "timeout",
                                    "node_fail", "preempted", "boot_fail", "deadline", "out_of_memory", "other"};
    json_object_set_new(o, "state", json_string(kStates[static_cast<int>(job.state)]));
    json_object_set_new(o, "retries_used", json_integer(meta->retries_used));
    json_object_set_new(o, "max_retries", json_integer(meta->settings.retries));
    json_object_set_new(o, "last_class", json_string(""));
    json_object_set_new(o, "last_evidence", json_utf8(meta->last_failure));
    json_array_append_new(arr, o);
  }
  return arr;
}

bool parse(const std::vector<std::string>& args, po::options_description& opts, po::variables_map& vm,
           po::positional_options_description* pos = nullptr) {
  po::command_line_parser parser(args);
  parser.options(opts);
  if (pos) parser.positional(*pos);
  po::store(parser.run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return false;
  }
  return true;
}

}  // namespace

int status(const std::vector<std::string>& args) {
  Common c;
  auto opts = common_options("safectl status [--json]\n\nNodes and their health, quarantines, workspaces", c);
  po::variables_map vm;
  if (!parse(args, opts, vm)) return 0;
  if (c.url.empty()) c.url = default_controller_url(config_path_from_env());
  int http = 0;
  auto body = call(c, "GET", "/api/v1/status", http);
  if (body && refused(http, *body)) return 1;
  json_error_t err;
  Json root;
  if (body) {
    root.reset(json_loads(body->c_str(), 0, &err));
  } else {
    note_fallback(c);
    auto slurm = make_libslurm_client();
    auto nodes = slurm->load_nodes();
    if (!nodes) {
      std::cerr << "safectl: " << nodes.error() << "; check SLURM_CONF and that slurmctld runs\n";
      return 1;
    }
    root.reset(json_object());
    json_t* arr = json_array();
    for (const auto& n : *nodes) {
      json_t* o = json_object();
      json_object_set_new(o, "name", json_utf8(n.name));
      json_object_set_new(o, "health", json_string(std::string(to_string(node_condition(n))).c_str()));
      json_object_set_new(o, "reason", json_utf8(n.reason));
      json_object_set_new(o, "quarantined", json_boolean(node_condition(n) == NodeCondition::quarantined));
      json_array_append_new(arr, o);
    }
    json_object_set_new(root.get(), "nodes", arr);
  }
  if (!root) {
    std::cerr << "safectl: safed sent an unreadable answer\n";
    return 1;
  }
  if (c.json) {
    std::cout << json_dump(root.get(), JSON_INDENT(2) | JSON_PRESERVE_ORDER) << "\n";
    return 0;
  }
  if (json_t* ctl = json_object_get(root.get(), "controller")) {
    std::printf("controller: %s, last pass %.1f ms, failovers in the last minute %lld/%lld\n",
                json_is_true(json_object_get(ctl, "slurm_ok")) ? "connected to Slurm" : str(ctl, "slurm_error"),
                json_real_value(json_object_get(ctl, "last_pass_ms")), num(ctl, "failovers_last_minute"),
                num(ctl, "rate_limit_per_minute"));
  }
  std::printf("\n%-12s %-12s %s\n", "NODE", "HEALTH", "REASON");
  std::size_t i;
  json_t* n;
  json_array_foreach(json_object_get(root.get(), "nodes"), i, n)
      std::printf("%-12s %-12s %s\n", str(n, "name"), str(n, "health"), str(n, "reason"));
  json_t* ws = json_object_get(root.get(), "workspaces");
  if (json_array_size(ws)) {
    std::printf("\n%-16s %-10s %-10s %-8s %s\n", "WORKSPACE", "GPU QUOTA", "GPUS USED", "ETTR", "TIME LOST (s)");
    json_array_foreach(ws, i, n) {
      json_t* ettr = json_object_get(n, "ettr");
      char ettr_text[16] = "-";
      if (json_is_real(ettr)) std::snprintf(ettr_text, sizeof ettr_text, "%.3f", json_real_value(ettr));
      std::printf("%-16s %-10lld %-10lld %-8s %.0f\n", str(n, "name"), num(n, "gpu_quota"), num(n, "gpus_in_use"),
                  ettr_text, json_real_value(json_object_get(n, "time_lost_s")));
    }
  }
  json_t* spares = json_object_get(root.get(), "spares");
  if (json_array_size(spares)) {
    auto names = [](json_t* list) {
      std::string out;
      std::size_t k;
      json_t* v;
      json_array_foreach(list, k, v) out += (out.empty() ? "" : ",") + std::string(json_string_value(v) ? json_string_value(v) : "");
      return out.empty() ? std::string("-") : out;
    };
    std::printf("\n%-12s %-22s %-7s %-16s %-16s %-16s %s\n", "PARTITION", "SPARE RESERVATION", "WANTED", "FREE",
                "REPAIRING", "CLAIMED", "USED");
    json_array_foreach(spares, i, n)
        std::printf("%-12s %-22s %-7lld %-16s %-16s %-16s %lld\n", str(n, "partition"), str(n, "reservation"),
                    num(n, "wanted"), names(json_object_get(n, "free")).c_str(),
                    names(json_object_get(n, "repairing")).c_str(), names(json_object_get(n, "claimed")).c_str(),
                    num(n, "placements"));
  }
  json_t* q = json_object_get(root.get(), "quarantined");
  if (json_array_size(q)) {
    std::printf("\nquarantined (release with: safectl node release NAME):\n");
    json_array_foreach(q, i, n) std::printf("  %-12s %s\n", str(n, "node"), str(n, "reason"));
  }
  return 0;
}

int jobs(const std::vector<std::string>& args) {
  Common c;
  bool all = false;
  auto opts = common_options("safectl jobs [--all] [--json]\n\nSaFE jobs with their attempts and last failure", c);
  opts.add_options()("all", po::bool_switch(&all), "include finished jobs");
  po::variables_map vm;
  if (!parse(args, opts, vm)) return 0;
  if (c.url.empty()) c.url = default_controller_url(config_path_from_env());
  int http = 0;
  auto body = call(c, "GET", all ? "/api/v1/jobs?all=1" : "/api/v1/jobs", http);
  if (body && refused(http, *body)) return 1;
  Json root;
  json_t* list = nullptr;
  if (body) {
    json_error_t err;
    root.reset(json_loads(body->c_str(), 0, &err));
    list = root ? json_object_get(root.get(), "jobs") : nullptr;
  } else {
    note_fallback(c);
    std::string error;
    root.reset(json_object());
    list = jobs_from_slurm(all, error);
    if (!list) {
      std::cerr << "safectl: " << error << "; check SLURM_CONF and that slurmctld runs\n";
      return 1;
    }
    json_object_set_new(root.get(), "jobs", list);
  }
  if (!list) {
    std::cerr << "safectl: safed sent an unreadable answer\n";
    return 1;
  }
  if (c.json) {
    std::cout << json_dump(root.get(), JSON_INDENT(2) | JSON_PRESERVE_ORDER) << "\n";
  } else {
    print_jobs_table(list);
  }
  return 0;
}

int job(const std::vector<std::string>& args) {
  Common c;
  std::string id;
  auto opts = common_options("safectl job ID [--json]\n\nOne SaFE job's full history: attempts, classifications "
                             "with evidence, failovers, actions",
                             c);
  opts.add_options()("id", po::value<std::string>(&id), "job id");
  po::positional_options_description pos;
  pos.add("id", 1);
  po::variables_map vm;
  if (!parse(args, opts, vm, &pos)) return 0;
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    std::cerr << "safectl: job expects a numeric job id, e.g. safectl job 42\n";
    return 2;
  }
  if (c.url.empty()) c.url = default_controller_url(config_path_from_env());
  int http = 0;
  auto body = call(c, "GET", "/api/v1/jobs/" + id, http);
  if (body && refused(http, *body)) return 1;
  if (!body) {
    note_fallback(c);
    std::string error;
    Json list(jobs_from_slurm(true, error));
    if (!list) {
      std::cerr << "safectl: " << error << "\n";
      return 1;
    }
    std::size_t i;
    json_t* j;
    json_array_foreach(list.get(), i, j) if (std::to_string(num(j, "job_id")) == id) {
      print_jobs_table(list.get());
      return 0;
    }
    std::cerr << "safectl: job " << id << " is not a SaFE job Slurm knows\n";
    return 1;
  }
  if (http == 404) {
    std::cerr << "safectl: safed has no record of job " << id << " (not a SaFE job, or older than its state)\n";
    return 1;
  }
  if (c.json) {
    std::cout << *body;
    return 0;
  }
  json_error_t err;
  Json root(json_loads(body->c_str(), 0, &err));
  if (!root) {
    std::cerr << "safectl: safed sent an unreadable answer\n";
    return 1;
  }
  json_t* r = root.get();
  std::printf("job %lld %s  workspace %s  state %s  retries %lld/%lld\n", num(r, "job_id"), str(r, "name"),
              *str(r, "workspace") ? str(r, "workspace") : "-", str(r, "state"), num(r, "retries_used"),
              num(r, "max_retries"));
  std::printf("\nattempts:\n");
  std::size_t i;
  json_t* a;
  json_array_foreach(json_object_get(r, "attempts"), i, a) {
    std::printf("  #%lld on %s: %s", num(a, "attempt"), str(a, "nodes"),
                *str(a, "end_state") ? str(a, "end_state") : "running");
    if (*str(a, "class")) std::printf(" -> %s (%s): %s", str(a, "class"), str(a, "rule"), str(a, "evidence"));
    std::printf("\n");
  }
  std::printf("\nfailovers:\n");
  json_array_foreach(json_object_get(r, "failovers"), i, a) {
    json_t* mttr = json_object_get(a, "mttr_s");
    std::printf("  after attempt #%lld: %s, phase %s, bad nodes %s%s\n", num(a, "attempt"), str(a, "class"),
                str(a, "phase"), *str(a, "bad_nodes") ? str(a, "bad_nodes") : "-",
                json_is_integer(mttr) ? (", running again after " + std::to_string(json_integer_value(mttr)) + " s").c_str()
                                      : "");
  }
  std::printf("\nactions:\n");
  json_array_foreach(json_object_get(r, "actions"), i, a) {
    std::time_t when = static_cast<std::time_t>(num(a, "time"));
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", std::localtime(&when));
    std::printf("  %s %s%s %s\n", stamp, str(a, "action"),
                json_is_true(json_object_get(a, "ok")) ? "" : " (failed)", str(a, "detail"));
  }
  return 0;
}

int node_release(const std::vector<std::string>& args) {
  Common c;
  std::string node;
  auto opts = common_options("safectl node release NAME\n\nEnd a node's SaFE quarantine and resume it", c);
  opts.add_options()("node", po::value<std::string>(&node), "node name");
  po::positional_options_description pos;
  pos.add("node", 1);
  po::variables_map vm;
  if (!parse(args, opts, vm, &pos)) return 0;
  if (node.empty()) {
    std::cerr << "safectl: node release expects a node name, e.g. safectl node release n3\n";
    return 2;
  }
  if (c.url.empty()) c.url = default_controller_url(config_path_from_env());
  int http = 0;
  auto body = call(c, "POST", "/api/v1/nodes/" + node + "/release", http);
  if (body) {
    if (refused(http, *body)) return 1;
    std::cout << "released " << node << "\n";
    return 0;
  }
  note_fallback(c);
  auto slurm = make_libslurm_client();
  auto nodes = slurm->load_nodes();
  if (!nodes) {
    std::cerr << "safectl: " << nodes.error() << "\n";
    return 1;
  }
  for (const auto& n : *nodes) {
    if (n.name != node) continue;
    if (node_condition(n) != NodeCondition::quarantined) {
      std::cerr << "safectl: node " << node << " is not quarantined by SaFE; nothing to release\n";
      return 1;
    }
    safe::Status resumed = slurm->resume_node(node);
    if (!resumed) {
      std::cerr << "safectl: cannot resume " << node << ": " << resumed.error() << " (run as root or SlurmUser)\n";
      return 1;
    }
    std::cout << "released " << node << " (directly in Slurm; safed records it when it runs again)\n";
    return 0;
  }
  std::cerr << "safectl: no node " << node << " in Slurm\n";
  return 1;
}

}  // namespace safe::ctl
