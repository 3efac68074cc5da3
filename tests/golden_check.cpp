// golden_check REFERENCE.csv CANDIDATE.csv [--pareto] [--rtol X]
// Compares a zerosearch CSV with a reference CSV written by the Python original, row by row by
// design point (mbs, tp, pp, dp, method, placement, plus node-count columns), with the rules of
// shared/tools/compare_csv.py --rtol 0: m, partition, exp_partition, is_oom equal; the float
// columns (times, memory, prices) identical as text, i.e. the same Python repr of the same
// float64 (or float32-valued) number, so the port is checked bit for bit; best feasible point
// and ranks equal up to exact ties; rows sorted.
// --rtol X (diagnosis only, never in the golden tests) compares the float columns as numbers
// within a relative tolerance X instead, and treats steps within X as ties.
// --pareto leaves out compositions with a zero node count (docs/model.md §6.3) and the global
// rank checks. Exit 0 when everything matches; the last line is a one-line summary.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "csv_fields.hpp"

namespace {

using Row = std::map<std::string, std::string>;

std::vector<Row> load(const std::string& path, std::vector<std::string>& header) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("cannot read " + path);
  }
  std::string line;
  std::getline(in, line);
  header = zerosearch::testing::csv_fields(line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto f = zerosearch::testing::csv_fields(line);
    if (f.size() != header.size()) {
      throw std::runtime_error(path + ": a row has " + std::to_string(f.size()) + " fields, header " +
                               std::to_string(header.size()));
    }
    Row r;
    for (std::size_t i = 0; i < f.size(); ++i) r[header[i]] = f[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

const std::vector<std::string> kFloatCols = {"estimated time (s/step)", "pipeline time",
                                             "DP all-reduce time", "Emb layer all-reduce time",
                                             "gpumem", "train_cost", "price_per_step"};
const std::set<std::string> kKnown = {"estimated time (s/step)", "pipeline time", "DP all-reduce time",
                                      "Emb layer all-reduce time", "gpumem", "train_cost",
                                      "price_per_step", "m", "exp_partition", "mbs", "tp", "pp", "dp",
                                      "dp method", "overlap_comm", "node placement", "partition",
                                      "is_oom", "rank", "real_rank", "pareto"};

std::vector<long long> ints(const std::string& s) {
  static const std::regex re("-?[0-9]+");
  std::vector<long long> out;
  for (std::sregex_iterator it(s.begin(), s.end(), re), end; it != end; ++it) out.push_back(std::stoll(it->str()));
  return out;
}

std::string words(const std::string& s) {
  static const std::regex re("[A-Za-z0-9_.\\-]+");
  std::string out;
  for (std::sregex_iterator it(s.begin(), s.end(), re), end; it != end; ++it) out += it->str() + " ";
  return out;
}

bool truthy(const std::string& s) {
  std::string t;
  for (char c : s) if (!std::isspace(static_cast<unsigned char>(c))) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "true" || t == "1" || t == "yes") return true;
  if (t == "false" || t == "0" || t == "no") return false;
  throw std::runtime_error("not a boolean: " + s);
}

/// Equal, or with rtol > 0 (diagnosis) within rtol relative or 1e-9 absolute.
bool close(double a, double b, double rtol) {
  if (rtol <= 0.0) {
    return a == b;
  }
  return std::fabs(a - b) <= std::max(rtol * std::max(std::fabs(a), std::fabs(b)), 1e-9);
}

std::string key_of(const Row& r, const std::vector<std::string>& counts) {
  std::ostringstream k;
  k << std::stoll(r.at("mbs")) << ',' << std::stoll(r.at("tp")) << ',' << std::stoll(r.at("pp")) << ','
    << std::stoll(r.at("dp")) << ',' << r.at("dp method") << ",[" << words(r.at("node placement")) << "]";
  for (const auto& c : counts) k << ',' << c << '=' << static_cast<long long>(std::stod(r.at(c)));
  return k.str();
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool pareto = false;
  double rtol = 0.0; // exact
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--pareto") pareto = true;
    else if (args[i] == "--rtol" && i + 1 < args.size()) rtol = std::stod(args[++i]);
    else files.push_back(args[i]);
  }
  if (files.size() != 2) {
    std::cerr << "usage: golden_check REFERENCE.csv CANDIDATE.csv [--pareto] [--rtol X]\n";
    return 2;
  }
  try {
    std::vector<std::string> ref_header, cand_header;
    auto ref_rows = load(files[0], ref_header);
    auto cand_rows = load(files[1], cand_header);
    std::vector<std::string> counts;
    for (const auto& c : ref_header) {
      if (!kKnown.count(c) && std::find(cand_header.begin(), cand_header.end(), c) != cand_header.end()) counts.push_back(c);
    }
    for (const auto& c : ref_header) {
      if (kKnown.count(c) && std::find(cand_header.begin(), cand_header.end(), c) == cand_header.end()) {
        std::cout << "FAIL: candidate lacks column " << c << "\n";
        return 1;
      }
    }
    if (pareto) {
      const auto full = [&](const Row& r) {
        for (const auto& c : counts) if (std::stod(r.at(c)) <= 0) return false;
        return true;
      };
      ref_rows.erase(std::remove_if(ref_rows.begin(), ref_rows.end(), [&](const Row& r) { return !full(r); }), ref_rows.end());
      cand_rows.erase(std::remove_if(cand_rows.begin(), cand_rows.end(), [&](const Row& r) { return !full(r); }), cand_rows.end());
    }
    std::vector<std::string> problems;
    std::map<std::string, const Row*> ref, cand;
    for (const auto& r : ref_rows) ref[key_of(r, counts)] = &r;
    for (const auto& r : cand_rows) {
      const auto k = key_of(r, counts);
      if (cand.count(k)) problems.push_back("duplicate design point in candidate: " + k);
      cand[k] = &r;
    }
    std::size_t missing = 0, extra = 0, mismatched = 0, rank_bad = 0;
    for (const auto& [k, r] : ref) if (!cand.count(k)) { ++missing; if (missing <= 10) problems.push_back("missing from candidate: " + k); }
    for (const auto& [k, r] : cand) if (!ref.count(k)) { ++extra; if (extra <= 10) problems.push_back("not in reference: " + k); }
    for (const auto& [k, rp] : ref) {
      const auto it = cand.find(k);
      if (it == cand.end()) continue;
      const Row& r = *rp;
      const Row& c = *it->second;
      std::string bad;
      for (const char* col : {"m", "exp_partition"}) if (r.at(col) != c.at(col)) bad += std::string(col) + ": " + r.at(col) + " vs " + c.at(col) + "; ";
      if (ints(r.at("partition")) != ints(c.at("partition"))) bad += "partition: " + r.at("partition") + " vs " + c.at("partition") + "; ";
      if (truthy(r.at("is_oom")) != truthy(c.at("is_oom"))) bad += "is_oom: " + r.at("is_oom") + " vs " + c.at("is_oom") + "; ";
      for (const auto& col : kFloatCols) {
        const bool same = rtol <= 0.0 ? r.at(col) == c.at(col)
                                       : close(std::stod(r.at(col)), std::stod(c.at(col)), rtol);
        if (!same) bad += col + ": " + r.at(col) + " vs " + c.at(col) + "; ";
      }
      if (!bad.empty()) { ++mismatched; if (mismatched <= 10) problems.push_back(k + ": " + bad); }
    }
    const auto step = [](const Row& r) { return std::stod(r.at("estimated time (s/step)")); };
    if (!pareto) {
      const Row* rb = nullptr; const Row* cb = nullptr; std::string cbk;
      for (const auto& [k, r] : ref) if (!truthy(r->at("is_oom")) && (!rb || step(*r) < step(*rb))) rb = r;
      for (const auto& [k, r] : cand) if (!truthy(r->at("is_oom")) && (!cb || step(*r) < step(*cb))) { cb = r; cbk = k; }
      if (rb && !cb) problems.push_back("candidate has no feasible (non-OOM) row");
      if (rb && cb && !(ref.count(cbk) && close(step(*ref.at(cbk)), step(*rb), rtol))) problems.push_back("best design point differs");
      std::vector<double> all, feas;
      for (const auto& [k, r] : ref) { all.push_back(step(*r)); if (!truthy(r->at("is_oom"))) feas.push_back(step(*r)); }
      const auto band = [&](const std::vector<double>& ts, double t) {
        long lo = 1, hi = 0;
        for (double x : ts) { if (x < t && !close(x, t, rtol)) ++lo; if (x < t || close(x, t, rtol)) ++hi; }
        return std::pair<long, long>{lo, hi};
      };
      for (const auto& [k, rp] : ref) {
        const auto it = cand.find(k);
        if (it == cand.end()) continue;
        const double t = step(*rp);
        const auto [lo, hi] = band(all, t);
        const long rank = std::stol(it->second->at("rank"));
        if (rank < lo || rank > hi) { ++rank_bad; if (rank_bad <= 10) problems.push_back(k + ": rank " + std::to_string(rank) + " outside " + std::to_string(lo) + ".." + std::to_string(hi)); }
        const long rr = std::stol(it->second->at("real_rank"));
        if (truthy(rp->at("is_oom"))) {
          if (rr != 0) { ++rank_bad; problems.push_back(k + ": OOM row has real_rank " + std::to_string(rr)); }
        } else {
          const auto [flo, fhi] = band(feas, t);
          if (rr < flo || rr > fhi) { ++rank_bad; if (rank_bad <= 10) problems.push_back(k + ": real_rank " + std::to_string(rr) + " outside " + std::to_string(flo) + ".." + std::to_string(fhi)); }
        }
      }
    }
    for (std::size_t i = 1; i < cand_rows.size(); ++i) {
      const double a = step(cand_rows[i - 1]), b = step(cand_rows[i]);
      if (b < a && !close(a, b, rtol)) { problems.push_back("candidate rows are not sorted by estimated time (s/step)"); break; }
    }
    for (std::size_t i = 0; i < std::min<std::size_t>(problems.size(), 30); ++i) std::cout << problems[i] << "\n";
    std::cout << (problems.empty() ? "PASS" : "FAIL") << ": " << ref.size() - missing << "/" << ref.size()
              << " reference rows matched, " << mismatched << " with differing values, " << missing << " missing, "
              << extra << " extra, " << rank_bad << " rank problems\n";
    return problems.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cout << "FAIL: " << e.what() << "\n";
    return 1;
  }
}
