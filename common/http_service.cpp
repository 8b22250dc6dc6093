#include "common/http_service.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>

namespace safe {
namespace {

// Per connection: how many requests it has made (keep-alive limit).
struct ConnectionState {
  unsigned requests = 0;
};

// Per request, from its first header to its response.
struct RequestState {
  HttpRequest request;
  bool too_large = false;
  bool dispatched = false;  // handed to a worker; the connection is suspended meanwhile
  std::mutex mutex;         // the worker writes `response`, the event thread reads it after resume
  std::optional<HttpResponse> response;
  bool close_after = false;
};

MHD_Result collect_query(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* query = static_cast<std::multimap<std::string, std::string>*>(cls);
  if (key) query->emplace(key, value ? value : "");
  return MHD_YES;
}

std::string client_address(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return "";
  char buf[INET6_ADDRSTRLEN] = {};
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

MHD_Result send(MHD_Connection* c, const HttpResponse& r, bool close_after) {
  MHD_Response* resp =
      MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  for (const auto& [k, v] : r.headers) MHD_add_response_header(resp, k.c_str(), v.c_str());
  if (close_after) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(r.status), resp);
  MHD_destroy_response(resp);
  return ok;
}

HttpResponse json_error(int status, const std::string& message) {
  return {status, "{\"error\":\"" + message + "\"}", "application/json", {}};
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Whether a PEM certificate and a PEM private key belong together. libmicrohttpd only says that
// it could not start, so this is checked first to tell a wrong pair from a busy address.
bool matching_pem_pair(const std::string& cert_pem, const std::string& key_pem) {
  BIO* cb = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  X509* cert = cb ? PEM_read_bio_X509(cb, nullptr, nullptr, nullptr) : nullptr;
  EVP_PKEY* key = kb ? PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr) : nullptr;
  bool ok = cert && key && X509_check_private_key(cert, key) == 1;
  EVP_PKEY_free(key);
  X509_free(cert);
  BIO_free(kb);
  BIO_free(cb);
  return ok;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// libmicrohttpd decodes %XX in the path and the query in place, and hands them on as C strings:
// a decoded %00 would cut them short ("/api/v1/workloads/%00" would read as the list
// "/api/v1/workloads/"). So %00 stays as it is written; every other escape is decoded.
size_t unescape_keeping_nul(void*, MHD_Connection*, char* s) {
  char* out = s;
  for (const char* in = s; *in;) {
    if (in[0] == '%' && hex_digit(in[1]) >= 0 && hex_digit(in[2]) >= 0) {
      int v = hex_digit(in[1]) * 16 + hex_digit(in[2]);
      if (v != 0) {
        *out++ = static_cast<char>(v);
        in += 3;
        continue;
      }
    }
    *out++ = *in++;
  }
  *out = '\0';
  return static_cast<size_t>(out - s);
}

}  // namespace

struct HttpService::Impl {
  HttpServiceSettings settings;
  Handler handler;
  std::function<bool(const HttpRequest&)> inline_route;
  MHD_Daemon* daemon = nullptr;
  int port = 0;
  std::string cert_pem, key_pem;  // MHD keeps pointers to these while it runs
  std::atomic<long long> requests{0};

  std::mutex mutex;
  std::condition_variable work;
  std::deque<std::function<void()>> tasks;
  std::vector<std::thread> workers;
  bool stopping = false;

  void work_loop() {
    std::unique_lock lock(mutex);
    while (true) {
      work.wait(lock, [&] { return stopping || !tasks.empty(); });
      if (tasks.empty()) return;  // stopping, and nothing left to answer
      auto task = std::move(tasks.front());
      tasks.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  HttpResponse run_handler(const HttpRequest& r) {
    try {
      return handler(r);
    } catch (const std::exception& e) {
      return json_error(500, std::string("safe: internal error: ") + e.what() + "; please report it");
    } catch (...) {
      return json_error(500, "safe: internal error; please report it");
    }
  }

  static void on_connection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<Impl*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      *socket_context = new ConnectionState;
      // Until its first request is complete a connection has only this long (a client that
      // opens connections and sends nothing holds them no longer).
      MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, self->settings.limits.first_request_timeout_s);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      delete static_cast<ConnectionState*>(*socket_context);
      *socket_context = nullptr;
    }
  }

  static void on_completed(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
    delete static_cast<RequestState*>(*con_cls);
    *con_cls = nullptr;
  }

  static MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method, const char*,
                               const char* upload_data, size_t* upload_size, void** con_cls) {
    auto* self = static_cast<Impl*>(cls);
    const HttpLimits& limits = self->settings.limits;
    auto* st = static_cast<RequestState*>(*con_cls);
    if (!st) {
      st = new RequestState;
      *con_cls = st;
      st->request.method = method ? method : "";
      st->request.path = url ? url : "";
      MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, &st->request.query);
      if (const char* auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION))
        st->request.authorization = auth;
      if (const char* cookie = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_COOKIE))
        st->request.cookie = cookie;
      if (const char* csrf = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-CSRF-Token"))
        st->request.csrf_token = csrf;
      st->request.tls = !self->settings.tls_cert.empty();
      st->request.client = client_address(c);
      if (const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT)) {
        if (auto* conn = static_cast<ConnectionState*>(info->socket_context)) {
          ++conn->requests;
          st->close_after = conn->requests >= limits.max_requests_per_connection;
          if (conn->requests == 1)
            MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, limits.idle_timeout_s);
        }
      }
      // Refused before the body is read: a large upload is never buffered.
      const char* length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
      if (length && std::strtoull(length, nullptr, 10) > limits.max_body_bytes)
        return send(c, json_error(413, "request body too large (at most " + std::to_string(limits.max_body_bytes) + " bytes)"),
                    true);
      return MHD_YES;
    }
    if (*upload_size) {
      if (st->request.body.size() + *upload_size > limits.max_body_bytes) return MHD_NO;  // chunked, too large: close
      st->request.body.append(upload_data, *upload_size);
      *upload_size = 0;
      return MHD_YES;
    }
    {
      std::lock_guard lock(st->mutex);
      if (st->response) return send(c, *st->response, st->close_after);  // the worker's answer, after resume
    }
    if (st->dispatched) return MHD_YES;
    ++self->requests;
    if (self->inline_route && self->inline_route(st->request))
      return send(c, self->run_handler(st->request), st->close_after);
    std::lock_guard lock(self->mutex);
    if (self->stopping) return send(c, json_error(503, "safe: shutting down; retry shortly"), true);
    st->dispatched = true;
    MHD_suspend_connection(c);
    self->tasks.push_back([self, c, st] {
      HttpResponse r = self->run_handler(st->request);
      {
        std::lock_guard done(st->mutex);
        st->response = std::move(r);
      }
      MHD_resume_connection(c);
    });
    self->work.notify_one();
    return MHD_YES;
  }
};

HttpService::HttpService(HttpServiceSettings settings, Handler handler, std::function<bool(const HttpRequest&)> inline_route)
    : impl_(std::make_unique<Impl>()) {
  impl_->settings = std::move(settings);
  impl_->handler = std::move(handler);
  impl_->inline_route = std::move(inline_route);
}

HttpService::~HttpService() { stop(); }

Status HttpService::start() {
  Impl& s = *impl_;
  const HttpServiceSettings& cfg = s.settings;
  std::string where = cfg.host + ":" + std::to_string(cfg.port);
  // The address to bind, numeric or a name (localhost).
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  std::string port_text = std::to_string(cfg.port);
  if (getaddrinfo(cfg.host.c_str(), port_text.c_str(), &hints, &found) != 0 || !found)
    return Error{"cannot listen on " + where + ": unknown address"};
  sockaddr_storage addr{};
  std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
  bool v6 = found->ai_family == AF_INET6;
  freeaddrinfo(found);

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
  if (v6) flags |= MHD_USE_IPv6;
  bool tls = !cfg.tls_cert.empty();
  if (tls) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
      return Error{"this libmicrohttpd has no TLS support; install Debian's libmicrohttpd12 (built with GnuTLS)"};
    auto cert = read_file(cfg.tls_cert), key = read_file(cfg.tls_key);
    if (!cert || !key)
      return Error{"cannot read TLS certificate " + cfg.tls_cert + " / key " + cfg.tls_key + "; check both files"};
    if (!matching_pem_pair(*cert, *key))
      return Error{"cannot use TLS certificate " + cfg.tls_cert + " / key " + cfg.tls_key +
                   " (unreadable or not a matching PEM pair)"};
    s.cert_pem = *cert;
    s.key_pem = *key;
    flags |= MHD_USE_TLS;
  }
  const HttpLimits& l = cfg.limits;
  std::vector<MHD_OptionItem> options = {
      {MHD_OPTION_SOCK_ADDR, 0, &addr},
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(l.max_connections), nullptr},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<intptr_t>(l.max_connections_per_client), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(l.idle_timeout_s), nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(l.max_header_bytes), nullptr},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Impl::on_connection), &s},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Impl::on_completed), &s},
      {MHD_OPTION_UNESCAPE_CALLBACK, reinterpret_cast<intptr_t>(&unescape_keeping_nul), nullptr},
  };
  if (tls) {
    options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(s.cert_pem.c_str())});
    options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(s.key_pem.c_str())});
  }
  options.push_back({MHD_OPTION_END, 0, nullptr});
  for (unsigned i = 0; i < std::max(1u, l.workers); ++i) s.workers.emplace_back([&s] { s.work_loop(); });
  s.daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &Impl::on_request, &s, MHD_OPTION_ARRAY, options.data(),
                              MHD_OPTION_END);
  if (!s.daemon) {
    int e = errno;
    stop();
    return Error{"cannot listen on " + where + ": " + std::strerror(e) + " (address in use or not local?)"};
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(s.daemon, MHD_DAEMON_INFO_BIND_PORT);
  s.port = info ? info->port : cfg.port;
  return ok_status();
}

int HttpService::port() const { return impl_->port; }

void HttpService::stop() {
  Impl& s = *impl_;
  if (s.daemon) MHD_quiesce_daemon(s.daemon);  // no new connections from here on
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
  }
  s.work.notify_all();
  // Workers finish the requests in hand (resuming their connections) before the daemon goes.
  for (auto& t : s.workers)
    if (t.joinable()) t.join();
  s.workers.clear();
  if (s.daemon) {
    MHD_stop_daemon(s.daemon);
    s.daemon = nullptr;
  }
}

HttpService::Stats HttpService::stats() const { return {impl_->requests.load()}; }

void raise_open_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

bool split_listen_address(const std::string& listen, std::string& host, int& port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string p = listen.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
  port = std::stoi(p);
  return port <= 65535;
}

}  // namespace safe
