// HostTopology from sysfs; thread pinning with sched_setaffinity.
#include "staging/detail/core/host_topology.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace staging {
namespace {

std::optional<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<int> affinity_mask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// One CPU per physical core first (the lowest of each sibling group), then the siblings.
std::vector<int> cores_first(const std::filesystem::path& cpu_dir, const std::vector<int>& cpus) {
  std::vector<int> first, rest;
  std::set<int> seen_groups;
  for (int c : cpus) {
    const auto text =
        read_text(cpu_dir / ("cpu" + std::to_string(c)) / "topology" / "thread_siblings_list");
    const auto siblings = text ? parse_cpu_list(*text) : std::nullopt;
    const int leader = siblings && !siblings->empty() ? siblings->front() : c;
    if (seen_groups.insert(leader).second) {
      first.push_back(c);
    } else {
      rest.push_back(c);
    }
  }
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

}  // namespace

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::set<int> cpus;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.remove_suffix(1);
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, end - pos);
    const std::size_t dash = item.find('-');
    int lo = 0, hi = 0;
    const auto parse = [](std::string_view s, int& out) {
      if (s.empty()) return false;
      const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
      return r.ec == std::errc() && r.ptr == s.data() + s.size() && out >= 0;
    };
    if (dash == std::string_view::npos) {
      if (!parse(item, lo)) return std::nullopt;
      hi = lo;
    } else if (!parse(item.substr(0, dash), lo) || !parse(item.substr(dash + 1), hi) || hi < lo) {
      return std::nullopt;
    }
    for (int c = lo; c <= hi; ++c)
      cpus.insert(c);
    pos = end + 1;
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

HostTopology HostTopology::read(const std::string& sys_root,
                                std::optional<std::vector<int>> allowed) {
  const std::vector<int> mask = allowed ? std::move(*allowed) : affinity_mask();
  const std::set<int> usable(mask.begin(), mask.end());
  const std::filesystem::path node_dir = std::filesystem::path(sys_root) / "devices/system/node";
  const std::filesystem::path cpu_dir = std::filesystem::path(sys_root) / "devices/system/cpu";
  HostTopology t;
  std::set<int> placed;
  std::error_code ec;
  std::vector<std::pair<int, std::filesystem::path>> found;
  for (const auto& entry : std::filesystem::directory_iterator(node_dir, ec)) {
    const std::string name = entry.path().filename().string();
    int id = 0;
    if (name.size() <= 4 || name.compare(0, 4, "node") != 0) continue;
    const auto r = std::from_chars(name.data() + 4, name.data() + name.size(), id);
    if (r.ec != std::errc() || r.ptr != name.data() + name.size()) continue;
    found.emplace_back(id, entry.path());
  }
  std::sort(found.begin(), found.end());
  for (const auto& [id, path] : found) {
    const auto text = read_text(path / "cpulist");
    const auto list = text ? parse_cpu_list(*text) : std::nullopt;
    if (!list) continue;
    std::vector<int> cpus;
    for (int c : *list) {
      if (usable.count(c) != 0 && placed.insert(c).second) cpus.push_back(c);
    }
    if (!cpus.empty()) t.nodes.push_back(Node{id, cores_first(cpu_dir, cpus)});
  }
  // CPUs sysfs did not place (no sysfs, offline nodes): one node 0 for all, or added to node 0.
  std::vector<int> rest;
  for (int c : mask) {
    if (placed.count(c) == 0) rest.push_back(c);
  }
  if (!rest.empty()) {
    if (t.nodes.empty()) {
      t.nodes.push_back(Node{0, cores_first(cpu_dir, rest)});
    } else {
      auto& cpus = t.nodes.front().cpus;
      cpus.insert(cpus.end(), rest.begin(), rest.end());
    }
  }
  if (t.nodes.empty()) t.nodes.push_back(Node{0, {0}});
  return t;
}

const HostTopology::Node* HostTopology::node(int id) const noexcept {
  for (const Node& n : nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

std::vector<int> HostTopology::cpus(int id) const {
  if (const Node* n = id >= 0 ? node(id) : nullptr) return n->cpus;
  std::vector<int> all;
  for (const Node& n : nodes)
    all.insert(all.end(), n.cpus.begin(), n.cpus.end());
  return all;
}

bool pin_current_thread(std::span<const int> cpus) noexcept {
  if (cpus.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return false;
    CPU_SET(c, &set);
  }
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace staging
