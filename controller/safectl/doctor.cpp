// safectl doctor [--node NAME]: gather what doctor_checks.hpp judges, on this host: safe.yaml,
// Slurm through its own commands (scontrol, sbatch: what the admin would run, each with a time
// limit), the plugin files, munge, safed's status (asked with this host's munge credential) and
// the bridge's /healthz; then print one line per check, or JSON.
#include <curl/curl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <strings.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/authenticator.hpp"
#include "common/json_utf8.hpp"
#include "common/json_value.hpp"
#include "common/process_runner.hpp"
#include "common/sha256.hpp"
#include "common/slurm/node_control.hpp"
#include "controller/safectl/commands.hpp"
#include "controller/safectl/doctor_checks.hpp"

namespace po = boost::program_options;

namespace safe::ctl {
namespace {

using doctor::DoctorFacts;
constexpr std::chrono::seconds kCommandTimeout{15};

std::string slurm_command(const std::string& name) {
  std::string scontrol = kScontrolPath;
  return scontrol.substr(0, scontrol.rfind('/') + 1) + name;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

// What went wrong with a Slurm command, in its own words when it said any.
std::string failure(const ProcessResult& r) {
  std::string said = first_line(r.err.empty() ? r.out : r.err);
  return said.empty() ? r.describe() : said + " (" + r.describe() + ")";
}

void read_config(DoctorFacts& f) {
  ConfigResult loaded = load_config_file(f.config_path);
  f.config_sha256 = sha256_hex(loaded.text);
  if (loaded.ok()) f.config = std::move(loaded.config);
  for (const auto& e : loaded.errors) f.config_errors.push_back(e.to_string());
}

void read_slurm(DoctorFacts& f, ProcessRunner& runner) {
  ProcessResult config = runner.run({kScontrolPath, "show", "config"}, kCommandTimeout);
  if (config.ok())
    f.controller = doctor::parse_scontrol_config(config.out);
  else
    f.controller_error = failure(config);
  ProcessResult help = runner.run({slurm_command("sbatch"), "--help"}, kCommandTimeout);
  if (help.ok())
    f.sbatch_help = help.out;
  else
    f.sbatch_error = failure(help);
  ProcessResult version = runner.run({slurm_command("sbatch"), "--version"}, kCommandTimeout);
  if (version.ok()) f.local_slurm = doctor::parse_slurm_version(version.out);
}

// This host as a Slurm node: the name given, else the host name when Slurm knows a node by it.
void read_node(DoctorFacts& f, ProcessRunner& runner, const std::string& named) {
  char host[256] = {};
  std::string here = gethostname(host, sizeof host - 1) == 0 ? std::string(host) : "";
  here = here.substr(0, here.find('.'));
  std::string name = named.empty() ? here : named;
  if (name.empty()) return;
  ProcessResult shown = runner.run({kScontrolPath, "show", "node", "-o", name}, kCommandTimeout);
  std::optional<NodeStatus> node = shown.ok() ? parse_scontrol_show_node(shown.out) : std::nullopt;
  if (!node && named.empty()) return;  // not a node: nothing of a node's to check here
  f.node_name = name;
  if (node)
    f.node = node;
  else
    f.node_error = failure(shown);
  // The programs slurmd runs are looked for on this host only when it is that node (its name or
  // its NodeHostName: the test cluster's nodes all live on one host); another node's disk is not
  // this one's.
  std::string node_host;
  if (std::size_t at = shown.out.find(" NodeHostName="); at != std::string::npos) {
    node_host = shown.out.substr(at + 14);
    node_host = node_host.substr(0, node_host.find_first_of(" \n"));
  }
  if (!f.controller || here.empty() || (name != here && node_host != here)) return;
  for (const char* key : {"HealthCheckProgram", "Prolog", "Epilog"}) {
    for (const auto& path : doctor::programs_of(*f.controller, key)) {
      struct stat st {};
      if (path[0] == '/')
        f.executable[path] = stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
    }
  }
}

// The nodes in service, and the health checker's files in this host's health.state_dir (listed by
// find in a child, with a time limit: the directory may be on a hung network file system).
void read_health_state(DoctorFacts& f, ProcessRunner& runner) {
  // -a: every partition, whatever SINFO_PARTITION says.
  ProcessResult nodes = runner.run({slurm_command("sinfo"), "-h", "-N", "-a", "-o", "%N %T"}, kCommandTimeout);
  if (nodes.ok())
    f.nodes_in_service = doctor::parse_nodes_in_service(nodes.out);
  else
    f.nodes_error = failure(nodes);
  if (!f.config) return;
  ProcessResult files = runner.run(
      // -H: a state_dir that is a symbolic link (to a shared file system) is followed.
      {"/usr/bin/find", "-H", f.config->health.state_dir, "-maxdepth", "1", "-name", "*.json", "-printf", "%f %T@\n"},
      kCommandTimeout);
  if (files.ok())
    f.health_files = doctor::parse_health_files(files.out);
  else
    f.health_files_error = failure(files);
}

// Slurm's plugin_version of each SaFE plugin, from the first of the plugin directories that has it
// (as Slurm searches PluginDir). Read from the file, never loaded (plugin_version_in_elf).
void read_plugins(DoctorFacts& f, const std::string& dirs) {
  f.plugin_dirs = dirs;
  for (const char* file : {"spank_safe.so", "job_submit_safe.so"}) {
    for (std::size_t start = 0; start <= dirs.size();) {
      std::size_t colon = dirs.find(':', start);
      std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      start = colon == std::string::npos ? dirs.size() + 1 : colon + 1;
      doctor::PluginFile plugin;
      plugin.path = dir + "/" + file;
      plugin.spank = std::string(file) == "spank_safe.so";
      struct stat st {};
      if (dir.empty() || stat(plugin.path.c_str(), &st) != 0) continue;
      plugin.present = true;
      std::ifstream in(plugin.path, std::ios::binary);
      std::ostringstream bytes;
      if (!S_ISREG(st.st_mode) || st.st_size > (256 << 20) || !in || !(bytes << in.rdbuf())) {
        plugin.error = "cannot be read as a plugin file";
      } else {
        auto version = doctor::plugin_version_in_elf(bytes.str());
        if (version)
          plugin.version = doctor::slurm_version_string(*version);
        else
          plugin.error = version.error();
      }
      f.plugins.push_back(plugin);
      break;
    }
  }
}

size_t read_date(char* data, size_t size, size_t n, void* out) {
  std::string line(data, size * n);
  if (line.size() > 5 && strncasecmp(line.c_str(), "date:", 5) == 0) {
    time_t t = curl_getdate(line.c_str() + 5, nullptr);
    if (t > 0) *static_cast<std::optional<long long>*>(out) = t;
  }
  return size * n;
}

struct HttpAnswer {
  std::string error;  // empty when an answer came
  int status = 0;
  std::string body;
  std::optional<long long> date;
  double round_trip_s = 0;
  long long asked_at = 0;
};

// One GET with short time limits. The bridge's /healthz may sit behind TLS with a certificate this
// host cannot verify: only that it answers is asked, so its certificate is not checked.
HttpAnswer get(const std::string& url, const std::string& authorization, bool check_certificate) {
  HttpAnswer answer;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    answer.error = "curl cannot start";
    return answer;
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, curl_slist_free_all);
  if (!authorization.empty()) headers.reset(curl_slist_append(nullptr, ("Authorization: " + authorization).c_str()));
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 3000L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  if (headers) curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  if (!check_certificate) {
    curl_easy_setopt(curl.get(), CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl.get(), CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect_http_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, read_date);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &answer.date);
  auto t0 = std::chrono::steady_clock::now();
  std::time_t started = std::time(nullptr);
  CURLcode rc = curl_easy_perform(curl.get());
  answer.round_trip_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  answer.asked_at = started + std::llround(answer.round_trip_s / 2);
  if (rc != CURLE_OK) {
    answer.error = *error ? error : curl_easy_strerror(rc);
    return answer;
  }
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  answer.status = static_cast<int>(code);
  return answer;
}

void ask_safed(DoctorFacts& f, const std::string& url) {
  f.safed.url = url;
  std::string authorization;
  if (auto credential = new_munge_credential()) {
    f.munge_ok = true;
    authorization = "Munge " + *credential;
  } else {
    f.munge_error = credential.error();
  }
  HttpAnswer answer = get(url + "/api/v1/status", authorization, true);
  f.safed.error = answer.error;
  f.safed.http_status = answer.status;
  f.safed.date = answer.date;
  f.safed.asked_at = answer.asked_at;
  f.safed.round_trip_s = answer.round_trip_s;
  Json root(json_loads(answer.body.c_str(), 0, nullptr));
  if (answer.status != 200) {
    const char* said = root ? json_string_value(json_object_get(root.get(), "error")) : nullptr;
    if (said) f.safed.refusal = said;
    return;
  }
  json_t* ctl = root ? json_object_get(root.get(), "controller") : nullptr;
  if (!ctl) {
    f.safed.http_status = -1;
    f.safed.error = "its /api/v1/status is not the JSON safed writes";
    return;
  }
  auto text = [&](const char* key) {
    const char* s = json_string_value(json_object_get(ctl, key));
    return std::string(s ? s : "");
  };
  f.safed.role = text("role");
  f.safed.active_url = text("active_url");
  f.safed.slurm_ok = json_is_true(json_object_get(ctl, "slurm_ok"));
  f.safed.slurm_error = text("slurm_error");
  f.safed.last_pass = json_integer_value(json_object_get(ctl, "last_pass"));
  f.safed.config_sha256 = text("config_sha256");
}

void ask_bridge(DoctorFacts& f, const std::string& named) {
  f.bridge.named = !named.empty();
  if (f.bridge.named) {
    f.bridge.url = named;
  } else {
    KubeBridgeConfig defaults;
    const KubeBridgeConfig& kb = f.config ? f.config->kube_bridge : defaults;
    f.bridge.url = (kb.tls_cert.empty() ? "http://" : "https://") + kb.listen;
  }
  HttpAnswer answer = get(f.bridge.url + "/healthz", "", false);
  f.bridge.error = answer.error;
  f.bridge.http_status = answer.status;
}

void print_text(const std::vector<doctor::Check>& checks) {
  for (const auto& c : checks) {
    std::string verdict = c.verdict == doctor::Verdict::fail ? "FAIL" : doctor::to_string(c.verdict);
    std::printf("%-5s %-21s %s\n", verdict.c_str(), c.name.c_str(), c.detail.c_str());
    if (!c.fix.empty()) std::printf("%-27s fix: %s\n", "", c.fix.c_str());
  }
  std::size_t failed = 0, warned = 0;
  for (const auto& c : checks) {
    failed += c.verdict == doctor::Verdict::fail;
    warned += c.verdict == doctor::Verdict::warn;
  }
  std::printf("%s: %zu failed, %zu warnings, %zu checks\n", failed ? "not ready" : "ready", failed, warned, checks.size());
}

void print_json(const std::vector<doctor::Check>& checks) {
  Json root(json_object());
  json_object_set_new(root.get(), "ok", json_boolean(!doctor::any_failed(checks)));
  json_t* list = json_array();
  for (const auto& c : checks) {
    json_t* o = json_object();
    json_object_set_new(o, "name", json_utf8(c.name));
    json_object_set_new(o, "verdict", json_string(doctor::to_string(c.verdict)));
    json_object_set_new(o, "detail", json_utf8(c.detail));
    json_object_set_new(o, "fix", json_utf8(c.fix));
    json_array_append_new(list, o);
  }
  json_object_set_new(root.get(), "checks", list);
  char* text = json_dumps(root.get(), JSON_INDENT(2));
  std::cout << (text ? text : "{}") << "\n";
  std::free(text);
}

}  // namespace

int doctor(const std::vector<std::string>& args) {
  po::options_description opts(
      "safectl doctor [options]\n\n"
      "Check this host's SaFE installation end to end: safe.yaml, munge, slurmctld's SaFE settings,\n"
      "the SPANK plugin, plugin and Slurm releases, this node, safed, the REST bridge and the clock.\n"
      "Each failure says what to do. Exit 0 when nothing failed (warnings pass), else 1");
  bool json = false;
  opts.add_options()("help,h", "show this help")("json", po::bool_switch(&json), "print JSON for scripts")(
      "node", po::value<std::string>(), "check this Slurm node (default: this host, when Slurm has a node by its name)")(
      "config", po::value<std::string>(), "safe.yaml to check (default: $SAFE_CONFIG, else /etc/safe/safe.yaml)")(
      "url", po::value<std::string>(), "safed's address (default: $SAFE_CONTROLLER_URL, else the active safed, else controller.listen)")(
      "bridge", po::value<std::string>(), "the REST bridge's address; given, it must answer (default: kube_bridge.listen)")(
      "plugin-dir", po::value<std::string>(), "where Slurm finds SaFE's plugins (default: slurmctld's PluginDir)")(
      "max-clock-skew", po::value<int>()->default_value(5), "seconds this host's clock may differ from safed's host's");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  po::notify(vm);
  DoctorFacts f;
  f.built_for_slurm = SAFE_SLURM_VERSION;
  f.max_clock_skew_s = vm["max-clock-skew"].as<int>();
  f.config_path = vm.count("config") ? vm["config"].as<std::string>() : config_path_from_env();
  read_config(f);
  SystemProcessRunner runner(4 << 20);
  read_slurm(f, runner);
  read_node(f, runner, vm.count("node") ? vm["node"].as<std::string>() : "");
  std::string plugin_dirs = SAFE_SLURM_PLUGIN_DIR;
  if (vm.count("plugin-dir"))
    plugin_dirs = vm["plugin-dir"].as<std::string>();
  else if (f.controller && f.controller->count("PluginDir"))  // slurmctld's, and where packages put them here
    plugin_dirs = f.controller->at("PluginDir") + ":" + plugin_dirs;
  read_plugins(f, plugin_dirs);
  read_health_state(f, runner);
  ask_safed(f, vm.count("url") ? vm["url"].as<std::string>() : default_controller_url(f.config_path));
  ask_bridge(f, vm.count("bridge") ? vm["bridge"].as<std::string>() : "");
  f.now = std::time(nullptr);

  std::vector<doctor::Check> checks = doctor::diagnose(f);
  if (json)
    print_json(checks);
  else
    print_text(checks);
  return doctor::any_failed(checks) ? 1 : 0;
}

}  // namespace safe::ctl
