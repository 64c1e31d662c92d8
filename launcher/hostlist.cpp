// The hostlist parser: items split at top-level commas, each expanded range by range.
#include "launcher/hostlist.h"

#include <cstdint>

#include "core/text.h"

namespace dl {
namespace {

// One bracket's numbers as strings with their padding: "01-03,7" -> 01 02 03 7.
std::optional<std::vector<std::string>> expand_ranges(const std::string& inside) {
  std::vector<std::string> out;
  for (const std::string& part : split(inside, ',')) {
    const auto dash = part.find('-');
    const std::string lo = dash == std::string::npos ? part : part.substr(0, dash);
    const std::string hi = dash == std::string::npos ? part : part.substr(dash + 1);
    const auto a = parse_u64(lo);
    const auto b = parse_u64(hi);
    if (lo.empty() || hi.empty() || !a || !b || *a > *b || lo[0] == '+' || hi[0] == '+' ||
        lo[0] == '-' || hi[0] == '-') {
      return std::nullopt;
    }
    if (*b - *a >= kMaxHosts) return std::nullopt;
    for (std::uint64_t n = *a; n <= *b; ++n) {
      out.push_back(zero_padded(n, lo.size()));
      if (out.size() > kMaxHosts) return std::nullopt;
    }
  }
  return out;
}

// One item: literal text and bracketed ranges, every combination in order.
bool expand_item(const std::string& item, std::vector<std::string>* hosts) {
  if (item.empty()) return false;
  std::vector<std::string> partial = {""};
  std::size_t i = 0;
  while (i < item.size()) {
    if (item[i] == ']') return false;
    if (item[i] != '[') {
      const auto next = item.find_first_of("[]", i);
      const std::string text =
          item.substr(i, next == std::string::npos ? std::string::npos : next - i);
      for (auto& p : partial) p += text;
      i = next == std::string::npos ? item.size() : next;
      continue;
    }
    const auto close = item.find(']', i);
    if (close == std::string::npos) return false;
    const std::string inside = item.substr(i + 1, close - i - 1);
    if (inside.find('[') != std::string::npos) return false;
    const auto numbers = expand_ranges(inside);
    if (!numbers || numbers->empty()) return false;
    std::vector<std::string> next;
    for (const auto& p : partial) {
      for (const auto& n : *numbers) {
        next.push_back(p + n);
        if (hosts->size() + next.size() > kMaxHosts) return false;
      }
    }
    partial = std::move(next);
    i = close + 1;
  }
  // An item without brackets adds a host too: the limit counts every item (hostlist_fuzz found
  // "n[0-999999],m" giving kMaxHosts + 1).
  if (hosts->size() + partial.size() > kMaxHosts) return false;
  hosts->insert(hosts->end(), partial.begin(), partial.end());
  return true;
}

// Splits at commas outside brackets; nullopt on unbalanced brackets.
std::optional<std::vector<std::string>> top_level_items(const std::string& list) {
  std::vector<std::string> items;
  std::string current;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) return std::nullopt;
    if (c == ',' && depth == 0) {
      items.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0) return std::nullopt;
  items.push_back(current);
  return items;
}

}  // namespace

std::optional<std::vector<std::string>> expand_hostlist(const std::string& list) {
  const std::string text = trim(list);
  if (text.empty() || text.find_first_of(" \t\n") != std::string::npos) return std::nullopt;
  const auto items = top_level_items(text);
  if (!items) return std::nullopt;
  std::vector<std::string> hosts;
  for (const auto& item : *items) {
    if (!expand_item(item, &hosts)) return std::nullopt;
  }
  return hosts;
}

std::optional<std::string> first_host(const std::string& list) {
  const std::string text = trim(list);
  const auto items = top_level_items(text);
  if (!items || text.empty()) return std::nullopt;
  // The whole list must be well formed; the first item alone decides the host.
  if (!expand_hostlist(text)) return std::nullopt;
  std::vector<std::string> hosts;
  if (!expand_item(items->front(), &hosts) || hosts.empty()) return std::nullopt;
  return hosts.front();
}

std::optional<std::vector<int>> expand_tasks_per_node(const std::string& counts) {
  std::vector<int> out;
  const std::string text = trim(counts);
  if (text.empty()) return std::nullopt;
  for (const std::string& part : split(text, ',')) {
    const auto paren = part.find("(x");
    const std::string count = paren == std::string::npos ? part : part.substr(0, paren);
    std::uint64_t repeat = 1;
    if (paren != std::string::npos) {
      if (part.back() != ')') return std::nullopt;
      const auto r = parse_u64(part.substr(paren + 2, part.size() - paren - 3));
      if (!r || *r == 0 || *r > kMaxHosts) return std::nullopt;
      repeat = *r;
    }
    const auto n = parse_u64(count);
    if (!n || *n == 0 || *n > 100000 || count[0] == '+') return std::nullopt;
    if (out.size() + repeat > kMaxHosts) return std::nullopt;
    out.insert(out.end(), repeat, static_cast<int>(*n));
  }
  return out;
}

}  // namespace dl
