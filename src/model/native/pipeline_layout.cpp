// Megatron-Core's pipeline layout and interleaved 1F1B on per-chunk times (docs/native.md §2.5).
#include "zerosearch/model/pipeline_layout.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <stdexcept>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/core/model.hpp"

namespace zerosearch {

namespace {

/// The longest unrolled layout accepted (a DeepSeek-V3 layout is about 100 characters): a
/// bound on "(...)*n" so that a typo such as *1000000000 is an error, not an allocation.
constexpr std::size_t kMaxUnrolled = 1'000'000;

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// Digits from `at`: their value and the index after them (value -1 past kMaxUnrolled).
std::pair<long long, std::size_t> count_at(const std::string& s, std::size_t at) {
  long long n = 0;
  std::size_t i = at;
  while (i < s.size() && is_digit(s[i])) {
    if (n <= static_cast<long long>(kMaxUnrolled)) n = n * 10 + (s[i] - '0');
    ++i;
  }
  return {n > static_cast<long long>(kMaxUnrolled) ? -1 : n, i};
}

void append_repeated(std::string& out, const std::string& part, long long n,
                     const std::string& text) {
  if (n < 0 || out.size() + part.size() * static_cast<std::size_t>(n) > kMaxUnrolled) {
    throw InputError(fmt::format("--pipeline_layout '{}' unrolls to more than {} entries; a "
                                 "layout has one entry per layer, embedding and loss",
                                 text, kMaxUnrolled));
  }
  for (long long k = 0; k < n; ++k) out += part;
}

/// One left-to-right pass of "(group)*n": a group is the text after '(' up to the first ')',
/// at least one character, followed by '*' and digits (Megatron's r'\(([^)]+)\)\*(\d+)').
std::string unroll_groups(const std::string& s, const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '(') {
      const std::size_t close = s.find(')', i + 1);
      if (close != std::string::npos && close > i + 1 && close + 2 < s.size() &&
          s[close + 1] == '*' && is_digit(s[close + 2])) {
        const auto [n, after] = count_at(s, close + 2);
        append_repeated(out, s.substr(i + 1, close - i - 1), n, text);
        i = after;
        continue;
      }
    }
    out += s[i];
    ++i;
  }
  return out;
}

/// One left-to-right pass of "x*n" for any single character x but a newline (r'(.)\*(\d+)').
std::string unroll_singles(const std::string& s, const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '\n' && i + 2 < s.size() && s[i + 1] == '*' && is_digit(s[i + 2])) {
      const auto [n, after] = count_at(s, i + 2);
      append_repeated(out, std::string(1, s[i]), n, text);
      i = after;
      continue;
    }
    out += s[i];
    ++i;
  }
  return out;
}

} // namespace

int PipelineLayout::layers() const noexcept {
  int n = 0;
  for (const LayoutChunk& c : chunks) n += c.layers;
  return n;
}

int PipelineLayout::mtp_layers() const noexcept {
  int n = 0;
  for (const LayoutChunk& c : chunks) n += c.mtp;
  return n;
}

std::vector<int> PipelineLayout::partition(int pp) const {
  std::vector<int> out(static_cast<std::size_t>(std::max(pp, 1)), 0);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const LayoutChunk& c = chunks[k];
    out[k % out.size()] += c.layers + (c.embedding ? 1 : 0) + (c.loss ? 1 : 0);
  }
  return out;
}

PipelineLayout parse_pipeline_layout(const std::string& text) {
  std::string s;
  for (const char c : text) {
    if (c != ',') s += c; // commas are cosmetic
  }
  s = unroll_singles(unroll_groups(s, text), text);
  PipelineLayout layout;
  layout.text = text;
  layout.chunks.emplace_back();
  int layer = 0;
  for (const char c : s) {
    LayoutChunk& chunk = layout.chunks.back();
    switch (c) {
    case '|':
      layout.chunks.emplace_back();
      layout.chunks.back().first_layer = layer;
      continue;
    case 'E': chunk.embedding = true; break;
    case 'L': chunk.loss = true; break;
    case 't':
      ++chunk.layers;
      ++layer;
      break;
    case 'm': ++chunk.mtp; break;
    default:
      throw InputError(fmt::format("--pipeline_layout '{}': '{}' is not a layer character "
                                   "(E embedding, t transformer layer, m MTP layer, L loss, | "
                                   "between chunks, (...)*n and x*n repeat, commas ignored)",
                                   text,
                                   std::isprint(static_cast<unsigned char>(c)) != 0
                                       ? std::string(1, c)
                                       : fmt::format("\\x{:02x}", static_cast<unsigned char>(c))));
    }
    chunk.entries += c;
  }
  return layout;
}

std::string pipeline_layout_invalid_reason(const PipelineLayout& l, int pp, int virtual_stages,
                                           long long layers) {
  const long long chunks = static_cast<long long>(l.chunks.size());
  if (chunks != static_cast<long long>(pp) * virtual_stages) {
    return fmt::format("--pipeline_layout '{}' has {} chunks but pp {} x virtual stages {} is {} "
                       "(one chunk per rank and virtual stage, '|' between them)",
                       l.text, chunks, pp, virtual_stages,
                       static_cast<long long>(pp) * virtual_stages);
  }
  // Entries in model order: the chunks one after the other (Megatron's flatten_layout).
  std::string flat;
  for (const LayoutChunk& c : l.chunks) flat += c.entries;
  if (flat.empty() || flat.front() != 'E') {
    return fmt::format("--pipeline_layout '{}': the first entry must be the embedding E",
                       l.text);
  }
  if (flat.back() != 'L') {
    return fmt::format("--pipeline_layout '{}': the last entry must be the loss L", l.text);
  }
  if (std::count(flat.begin(), flat.end(), 'E') != 1 ||
      std::count(flat.begin(), flat.end(), 'L') != 1) {
    return fmt::format("--pipeline_layout '{}': exactly one embedding E and one loss L", l.text);
  }
  const std::size_t first_m = flat.find('m');
  if (first_m != std::string::npos && flat.find('t', first_m) != std::string::npos) {
    return fmt::format("--pipeline_layout '{}': a transformer layer t after an MTP layer m "
                       "(the MTP layers come after every transformer layer)",
                       l.text);
  }
  if (l.layers() != layers) {
    return fmt::format("--pipeline_layout '{}' has {} transformer layers (t) but the model has {}",
                       l.text, l.layers(), layers);
  }
  const int mtp = l.mtp_layers();
  for (int r = 0; r < pp && mtp > 0; ++r) {
    for (int c = 0; c < virtual_stages; ++c) {
      const LayoutChunk& chunk = l.at(pp, r, c);
      if (chunk.mtp == 0) continue;
      if (c + 1 != virtual_stages) {
        return fmt::format("--pipeline_layout '{}': MTP layers (m) on rank {}'s virtual stage "
                           "{}; Megatron-Core takes them only on a rank's last virtual stage",
                           l.text, r, c);
      }
      if (chunk.mtp != mtp) {
        return fmt::format("--pipeline_layout '{}': the {} MTP layers (m) must all be in one "
                           "chunk",
                           l.text, mtp);
      }
    }
  }
  return {};
}

std::string pipeline_layout_model_reason(const PipelineLayout& l, const ModelSpec& m) {
  if (l.mtp_layers() > 0 && m.learned_position_embeddings) {
    return fmt::format("--pipeline_layout '{}': MTP layers (m) on {}, whose positions are "
                       "learned absolute embeddings; Megatron-LM takes multi-token prediction "
                       "only with rotary positions (or none): leave the m out",
                       l.text, m.name);
  }
  return {};
}

std::vector<InterleavedOp> interleaved_order(int pp, int v, int m, int rank) {
  const int total = m * v;
  int warm = interleaved_warmup_forwards(pp, v, m, rank);
  // One chunk per rank: Megatron-Core runs forward_backward_pipelining_without_interleaving
  // (megatron/core/pipeline_parallel/schedules.py, d98e8a64): min(pp - rank - 1, m) warm-up
  // forwards, plain 1F1B.
  if (v == 1) warm = std::min(pp - rank - 1, m);
  const int group = pp * v;
  const auto chunk_of = [&](int k, bool forward) {
    const int c = (k % group) / pp;
    return forward ? c : v - 1 - c;
  };
  const auto mb_of = [&](int k) { return (k / group) * pp + k % pp; };
  std::vector<InterleavedOp> order;
  order.reserve(static_cast<std::size_t>(2 * total));
  for (int k = 0; k < warm; ++k) order.push_back({true, chunk_of(k, true), mb_of(k), false});
  for (int k = 0; k < total - warm; ++k) {
    const int f = k + warm;
    order.push_back({true, chunk_of(f, true), mb_of(f), false});
    // Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm) runs the first
    // steady forward alone and pairs the others: m v - warm-up - 1 pairs (moe_a2a_overlap_pairs).
    order.push_back({false, chunk_of(k, false), mb_of(k), k > 0});
  }
  for (int k = total - warm; k < total; ++k) {
    order.push_back({false, chunk_of(k, false), mb_of(k), false});
  }
  return order;
}

std::vector<int> interleaved_held_peak(int pp, int v, int m, int rank,
                                       std::span<const double> bytes) {
  const int total = m * v;
  const int warm = interleaved_warmup_forwards(pp, v, m, rank);
  const int group = pp * v;
  // The chunks of the k-th forward and the k-th backward, as interleaved_order takes them.
  const auto forward_chunk = [&](int k) { return (k % group) / pp; };
  const auto backward_chunk = [&](int k) { return v - 1 - (k % group) / pp; };
  const auto vu = static_cast<std::size_t>(v);
  std::vector<int> held(vu, 0), best(vu, 0);
  double peak = -1.0;
  const auto record = [&] {
    double now = 0.0;
    for (std::size_t c = 0; c < vu; ++c) now += held[c] * bytes[c];
    if (now > peak) {
      peak = now;
      best = held;
    }
  };
  for (int k = 0; k < warm; ++k) ++held[static_cast<std::size_t>(forward_chunk(k))];
  record();
  // One forward then one backward per steady step; after `group` steps the held forwards
  // repeat (pp of each chunk added and removed), and the cool-down only removes.
  for (int k = 0; k < total - warm && k < group; ++k) {
    ++held[static_cast<std::size_t>(forward_chunk(warm + k))];
    record();
    --held[static_cast<std::size_t>(backward_chunk(k))];
  }
  return best;
}

double simulate_interleaved(const InterleavedTimes& t, int m, std::vector<InterleavedPass>* passes) {
  const int pp = t.pp;
  const int v = t.virtual_stages;
  const int positions = pp * v;
  const auto at = [m](int pos, int mb) {
    return static_cast<std::size_t>(pos) * static_cast<std::size_t>(m) +
           static_cast<std::size_t>(mb);
  };
  const std::size_t n = static_cast<std::size_t>(positions) * static_cast<std::size_t>(m);
  std::vector<double> forward_done(n, -1.0), backward_done(n, -1.0);
  std::vector<std::vector<InterleavedOp>> orders;
  for (int r = 0; r < pp; ++r) orders.push_back(interleaved_order(pp, v, m, r));
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<double> free_at(static_cast<std::size_t>(pp), 0.0);
  const auto link = [&](int r) { return t.link_s[static_cast<std::size_t>(r)]; };
  bool progress = true;
  std::size_t left = 0;
  for (const auto& o : orders) left += o.size();
  while (left > 0 && progress) {
    progress = false;
    for (int r = 0; r < pp; ++r) {
      const auto ru = static_cast<std::size_t>(r);
      while (next[ru] < orders[ru].size()) {
        const InterleavedOp& o = orders[ru][next[ru]];
        const int pos = o.chunk * pp + r;
        const std::size_t ci = ru * static_cast<std::size_t>(v) + static_cast<std::size_t>(o.chunk);
        double input = 0.0, busy = 0.0, send = 0.0;
        if (o.forward) {
          if (pos > 0) input = forward_done[at(pos - 1, o.micro_batch)];
          send = pos + 1 < positions ? link(r) : 0.0;
          busy = t.forward_s[ci] + send;
        } else {
          input = pos + 1 < positions ? backward_done[at(pos + 1, o.micro_batch)]
                                      : forward_done[at(pos, o.micro_batch)];
          const double hidden = o.steady && !t.pair_hidden_s.empty() ? t.pair_hidden_s[ci] : 0.0;
          send = pos > 0 ? link(r == 0 ? pp - 1 : r - 1) : 0.0;
          busy = std::max(0.0, t.backward_s[ci] - hidden) + send;
        }
        if (input < 0.0) break; // waits for another rank
        const double start = std::max(free_at[ru], input);
        const double end = start + busy;
        if (passes != nullptr) {
          passes->push_back(
              InterleavedPass{r, o.chunk, o.micro_batch, o.forward, start, end - send, end});
        }
        free_at[ru] = end;
        (o.forward ? forward_done : backward_done)[at(pos, o.micro_batch)] = end;
        ++next[ru];
        --left;
        progress = true;
      }
    }
  }
  if (left > 0) throw std::logic_error("interleaved 1F1B: the orders deadlock");
  return *std::max_element(free_at.begin(), free_at.end());
}

} // namespace zerosearch
