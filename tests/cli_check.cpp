// Runs the real zerosearch binary and checks what a user or a script sees.
//
//   cli_check error ZEROSEARCH CASES NAME DATA PROFILEDB WORK
//     Runs case NAME of CASES (errors.tsv: name, exit code, arguments, message) in a fresh WORK
//     folder holding an existing.csv, with "--record -o existing.csv" put before its arguments
//     (without -o when the case sets it). Passes when the exit code is the expected one, stderr is exactly
//     "zerosearch: error: <message>\n", stdout is empty, existing.csv is unchanged and no other
//     file was left in WORK. @DATA@, @PROFILEDB@ and @WORK@ in the arguments and message are
//     replaced.
//
//   cli_check json ZEROSEARCH WORK ARGS...
//     Runs ARGS with --format csv and with --format json; the JSON must be an array of objects
//     whose keys are the CSV header and whose values are the CSV's, with native types.
//
//   cli_check quiet ZEROSEARCH WORK ARGS...
//     ARGS must exit 0 and print nothing at all on stdout and stderr.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "csv_fields.hpp"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `argv` in `cwd` with stdout and stderr captured through files (no pipe deadlock).
Outcome run(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& capture) {
  const fs::path out_file = capture / "stdout.txt";
  const fs::path err_file = capture / "stderr.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0 || !freopen(out_file.c_str(), "wb", stdout) ||
        !freopen(err_file.c_str(), "wb", stderr)) {
      _exit(127);
    }
    std::vector<char*> args;
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.out = read_all(out_file);
  o.err = read_all(err_file);
  return o;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

/// Splits a command line on blanks; single quotes group words ('a b' is one argument).
std::vector<std::string> split_args(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  bool any = false;
  for (const char c : line) {
    if (c == '\'') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) {
        out.push_back(cur);
      }
      cur.clear();
      any = false;
    } else {
      cur += c;
      any = true;
    }
  }
  if (any) {
    out.push_back(cur);
  }
  return out;
}

int fail(const std::string& why) {
  std::cerr << "FAILED: " << why << '\n';
  return 1;
}

int check_error(const std::string& zerosearch, const fs::path& cases, const std::string& name,
                const std::string& data, const std::string& profiledb, const fs::path& work) {
  std::ifstream in(cases);
  std::string line;
  std::vector<std::string> fields;
  while (std::getline(in, line)) {
    if (line.rfind(name + "\t", 0) == 0) {
      std::istringstream s(line);
      for (std::string f; std::getline(s, f, '\t');) {
        fields.push_back(f);
      }
      break;
    }
  }
  if (fields.size() != 4) {
    return fail("case '" + name + "' not found or not 4 tab-separated fields in " + cases.string());
  }
  fs::remove_all(work);
  const fs::path run_dir = work / "run";
  const fs::path capture = work / "capture";
  fs::create_directories(run_dir);
  fs::create_directories(capture);
  const std::string kept = "an existing file that a failed run must not replace\n";
  std::ofstream(run_dir / "existing.csv", std::ios::binary) << kept;

  const auto subst = [&](const std::string& s) {
    return replace_all(replace_all(replace_all(s, "@DATA@", data), "@PROFILEDB@", profiledb),
                       "@WORK@", run_dir.string());
  };
  // The added flags go first, so that a case can end with a flag that lacks its value.
  std::vector<std::string> argv = {zerosearch, "--record"};
  const auto args = split_args(subst(fields[2]));
  const bool sets_output = std::find(args.begin(), args.end(), "-o") != args.end() ||
                           std::find(args.begin(), args.end(), "--output") != args.end();
  if (!sets_output) {
    argv.insert(argv.end(), {"-o", "existing.csv"});
  }
  argv.insert(argv.end(), args.begin(), args.end());

  const Outcome o = run(argv, run_dir, capture);
  const std::string expected_err = "zerosearch: error: " + subst(fields[3]) + "\n";
  const int expected_code = std::atoi(fields[1].c_str());
  int failures = 0;
  if (o.exit_code != expected_code) {
    failures += fail("exit code " + std::to_string(o.exit_code) + ", expected " + fields[1]);
  }
  if (o.err != expected_err) {
    failures += fail("stderr differs\n  got:      " + o.err + "  expected: " + expected_err);
  }
  if (!o.out.empty()) {
    failures += fail("stdout not empty: " + o.out);
  }
  if (read_all(run_dir / "existing.csv") != kept) {
    failures += fail("existing.csv was replaced");
  }
  for (const auto& entry : fs::recursive_directory_iterator(run_dir)) {
    if (entry.path().filename() != "existing.csv" && !entry.is_directory()) {
      failures += fail("left a file behind: " + entry.path().string());
    }
  }
  if (fs::exists(run_dir / "logs")) {
    failures += fail("created logs/");
  }
  if (failures == 0) {
    std::cout << "ok: " << o.err;
  }
  return failures == 0 ? 0 : 1;
}


/// The JSON value written as the CSV writes it (Python repr for lists and booleans).
bool same_value(const nlohmann::json& v, const std::string& csv) {
  if (v.is_boolean()) {
    return csv == (v.get<bool>() ? "True" : "False");
  }
  if (v.is_number_integer()) {
    return csv == std::to_string(v.get<long long>());
  }
  if (v.is_number_float()) {
    return std::stod(csv) == v.get<double>();
  }
  if (v.is_string()) {
    return csv == v.get<std::string>();
  }
  if (v.is_array()) {
    std::string text = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      text += i == 0 ? "" : ", ";
      text += v[i].is_string() ? "'" + v[i].get<std::string>() + "'" : v[i].dump();
    }
    return csv == text + "]";
  }
  return false;
}

int check_json(const std::string& zerosearch, const fs::path& work,
               const std::vector<std::string>& args) {
  fs::remove_all(work);
  fs::create_directories(work);
  std::vector<std::string> argv = {zerosearch};
  argv.insert(argv.end(), args.begin(), args.end());
  auto csv_argv = argv;
  csv_argv.insert(csv_argv.end(), {"--format", "csv"});
  auto json_argv = argv;
  json_argv.insert(json_argv.end(), {"--format", "json"});
  const Outcome csv = run(csv_argv, work, work);
  const Outcome json = run(json_argv, work, work);
  if (csv.exit_code != 0 || json.exit_code != 0) {
    return fail("zerosearch failed: " + csv.err + json.err);
  }
  std::vector<std::vector<std::string>> lines;
  std::istringstream s(csv.out);
  for (std::string line; std::getline(s, line);) {
    lines.push_back(zerosearch::testing::csv_fields(line));
  }
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(json.out);
  } catch (const std::exception& e) {
    return fail(std::string("JSON does not parse: ") + e.what());
  }
  if (!doc.is_array() || doc.size() + 1 != lines.size()) {
    return fail("JSON is not an array with one object per CSV row");
  }
  const auto& header = lines[0];
  for (std::size_t r = 0; r < doc.size(); ++r) {
    const auto& object = doc[r];
    // The CSV's columns, then the throughput columns where the CSV is the original's format
    // and has none of them, then "profile_source" (JSON only: measured or analytic profiles).
    static const std::vector<std::string> json_only = {
        "seq_len", "tokens per step", "tokens/s per GPU", "MFU", "MFU peak", "memory fit"};
    const bool csv_has_throughput =
        std::find(header.begin(), header.end(), "MFU") != header.end();
    const std::size_t expected =
        header.size() + 1 + (csv_has_throughput ? 0 : json_only.size());
    if (!object.is_object() || object.size() != expected ||
        !object.contains("profile_source") || !object["profile_source"].is_string()) {
      return fail("row " + std::to_string(r) + " does not have the CSV's columns, the "
                  "throughput columns and profile_source");
    }
    std::size_t c = 0;
    for (const auto& item : object.items()) {
      if (c >= header.size()) {
        const std::size_t k = c - header.size();
        if (item.key() == "profile_source" && k == (csv_has_throughput ? 0 : json_only.size())) {
          continue;
        }
        if (csv_has_throughput || k >= json_only.size() || item.key() != json_only[k]) {
          return fail("row " + std::to_string(r) + ": unexpected key '" + item.key() + "'");
        }
        ++c;
        continue;
      }
      if (item.key() != header[c]) {
        return fail("row " + std::to_string(r) + ": key '" + item.key() + "' where the CSV has '" +
                    header[c] + "'");
      }
      // One pipeline stage: JSON gives its transformer layers, the CSV the original's "81-81".
      const bool one_stage_exp = item.key() == "exp_partition" && object.contains("partition") &&
                                 object["partition"].size() == 1;
      if (!one_stage_exp && !same_value(item.value(), lines[r + 1][c])) {
        return fail("row " + std::to_string(r) + ", " + item.key() + ": JSON " +
                    item.value().dump() + " but CSV " + lines[r + 1][c]);
      }
      ++c;
    }
    if (!object["node placement"].is_array() || !object["partition"].is_array() ||
        !object["is_oom"].is_boolean() || !object["estimated time (s/step)"].is_number() ||
        !object["rank"].is_number_integer()) {
      return fail("row " + std::to_string(r) + " does not have native types");
    }
  }
  std::cout << "ok: " << doc.size() << " rows, JSON equals CSV\n";
  return 0;
}

int check_quiet(const std::string& zerosearch, const fs::path& work,
                const std::vector<std::string>& args) {
  fs::remove_all(work);
  fs::create_directories(work);
  std::vector<std::string> argv = {zerosearch};
  argv.insert(argv.end(), args.begin(), args.end());
  const Outcome o = run(argv, work, work);
  if (o.exit_code != 0) {
    return fail("exit code " + std::to_string(o.exit_code) + ": " + o.err);
  }
  if (!o.out.empty() || !o.err.empty()) {
    return fail("printed something:\n" + o.out + o.err);
  }
  std::cout << "ok: silent\n";
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() >= 2) {
    a[1] = fs::absolute(a[1]).string(); // the runs change folder
  }
  if (a.size() == 7 && a[0] == "error") {
    return check_error(a[1], a[2], a[3], a[4], a[5], a[6]);
  }
  if (a.size() >= 3 && a[0] == "json") {
    return check_json(a[1], a[2], {a.begin() + 3, a.end()});
  }
  if (a.size() >= 3 && a[0] == "quiet") {
    return check_quiet(a[1], a[2], {a.begin() + 3, a.end()});
  }
  std::cerr << "usage: cli_check error ZEROSEARCH CASES NAME DATA PROFILEDB WORK\n"
               "       cli_check json|quiet ZEROSEARCH WORK ARGS...\n";
  return 2;
}
