#include "controller/safed/cluster_shape_publisher.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "common/hostlist.hpp"

namespace safe {

ClusterShape build_cluster_shape(const std::vector<SlurmPartition>& partitions, const std::vector<SlurmNode>& nodes,
                                 long long now) {
  std::map<std::string, const SlurmNode*> by_name;
  for (const auto& n : nodes) by_name[n.name] = &n;
  ClusterShape shape;
  shape.written = now;
  for (const auto& p : partitions) {
    PartitionShape s;
    s.name = p.name;
    s.is_default = p.is_default;
    s.whole_node = p.whole_node;
    for (const auto& name : expand_hostlist(p.nodes)) {
      auto it = by_name.find(name);
      if (it == by_name.end()) continue;
      ++s.nodes;
      s.gpus_per_node = std::max(s.gpus_per_node, gpus_in_node_gres(it->second->gres));
      s.sockets_per_node = std::max(s.sockets_per_node, it->second->sockets);
    }
    shape.partitions.push_back(std::move(s));
  }
  return shape;
}

Status ClusterShapePublisher::publish(const ClusterShape& shape, long long now, long long refresh_s) {
  ClusterShape timeless = shape;
  timeless.written = 0;
  std::string content = to_json(timeless);
  if (content == last_ && now - last_written_ < refresh_s) return ok_status();
  std::string text = to_json(shape);
  std::string tmp = path_ + ".XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return Error{"safed: cannot write " + tmp + ": " + std::strerror(errno)};
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fchmod(fd, 0644) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path_.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    return Error{"safed: cannot write " + path_ + ": " + std::strerror(e)};
  }
  last_ = std::move(content);
  last_written_ = now;
  return ok_status();
}

}  // namespace safe
