// HostTopology: the host's NUMA nodes and the CPUs of each that this process may run on, read
// from Linux's sysfs (/sys/devices/system/node, /sys/devices/system/cpu) — no libnuma needed —
// and pinning a thread to some of them. The fill pool (fill_pool.hpp) uses it to keep its threads
// on the NUMA node of the GPU they feed, and optionally one thread per core.
//
//   node0: cpus 0-7,16-23   node1: cpus 8-15,24-31   (32 CPUs, SMT siblings i and i+16)
//   cpus(0) = [0 1 2 3 4 5 6 7 16 17 ... 23]: one CPU per physical core first, then siblings.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace staging {

/// See the file comment. Plain data; read() builds it.
struct HostTopology {
  /// One NUMA node.
  struct Node {
    /// The node's number as the kernel names it (node<id> in sysfs).
    int id = 0;
    /// CPUs of the node this process may run on (its affinity mask), one CPU per physical core
    /// first (in increasing order), then the remaining SMT siblings. Never empty.
    std::vector<int> cpus;
  };
  /// Nodes with at least one usable CPU, by increasing id. Never empty after read(): without a
  /// readable sysfs, one node 0 holding every CPU of the process's affinity mask.
  std::vector<Node> nodes;

  /// The topology of this host. `sys_root`: where sysfs is mounted ("/sys"; tests pass a
  /// directory laid out the same way). `allowed`: the CPUs to keep; nullopt: this process's
  /// affinity mask (sched_getaffinity). Never fails: what cannot be read is left out.
  [[nodiscard]] static HostTopology read(const std::string& sys_root = "/sys",
                                         std::optional<std::vector<int>> allowed = std::nullopt);

  /// True when more than one node has usable CPUs.
  [[nodiscard]] bool multi_node() const noexcept { return nodes.size() > 1; }
  /// The node with `id`, or null when it has no usable CPU (or does not exist).
  [[nodiscard]] const Node* node(int id) const noexcept;
  /// The usable CPUs of node `id` (ordered as Node::cpus); id < 0, or a node without usable
  /// CPUs: every usable CPU of the host, nodes in order.
  [[nodiscard]] std::vector<int> cpus(int id) const;
};

/// Parses a sysfs CPU list such as "0-3,8,10-11\n" into increasing, unique CPU numbers. nullopt
/// for malformed text; an empty list for "" or "\n".
[[nodiscard]] std::optional<std::vector<int>> parse_cpu_list(std::string_view text);

/// Restricts the calling thread to `cpus` (sched_setaffinity). False when `cpus` is empty, holds
/// a CPU number the call cannot express, or the kernel refuses (e.g. a CPU outside the
/// container's set); the thread's affinity is then unchanged. Threading: affects only the caller.
bool pin_current_thread(std::span<const int> cpus) noexcept;

}  // namespace staging
