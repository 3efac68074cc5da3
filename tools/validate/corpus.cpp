#include "validate/corpus.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace zerosearch::validate {

namespace fs = std::filesystem;

const std::string& Row::at(const std::string& column) const {
  static const std::string empty;
  const auto it = fields.find(column);
  return it == fields.end() ? empty : it->second;
}

std::string unquote(const std::string& f) {
  if (f.size() >= 2 && f.front() == '"' && f.back() == '"') {
    std::string out;
    for (std::size_t i = 1; i + 1 < f.size(); ++i) {
      out += f[i];
      if (f[i] == '"' && i + 2 < f.size() && f[i + 1] == '"') ++i;
    }
    return out;
  }
  return f;
}

std::vector<Row> read_corpus_file(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw BadInput(fmt::format("cannot read {}", file.string()));
  std::vector<std::string> header;
  std::vector<Row> rows;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string f;
    while (std::getline(ss, f, '\t')) fields.push_back(unquote(f));
    if (header.empty()) {
      header = fields;
      continue;
    }
    if (fields.size() > header.size()) {
      throw BadInput(fmt::format("{} row {}: {} fields, the header has {}", file.string(),
                                 number + 1, fields.size(), header.size()));
    }
    Row row;
    row.group = file.stem().string();
    row.line = ++number;
    for (std::size_t i = 0; i < header.size(); ++i) {
      row.fields[header[i]] = i < fields.size() ? fields[i] : "";
    }
    rows.push_back(std::move(row));
  }
  if (header.empty()) throw BadInput(fmt::format("{} is empty", file.string()));
  return rows;
}

std::vector<fs::path> corpus_files(const fs::path& folder) {
  std::vector<fs::path> files;
  if (!fs::is_directory(folder)) return files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_regular_file() && entry.path().extension() == ".tsv") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Row> load_corpus(const std::vector<fs::path>& files) {
  std::vector<Row> all;
  std::set<std::string> groups;
  for (const auto& file : files) {
    if (!groups.insert(file.stem().string()).second) {
      throw BadInput(fmt::format("two corpus files are source group '{}' ({}); a group is one file",
                                 file.stem().string(), file.string()));
    }
    auto rows = read_corpus_file(file);
    all.insert(all.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
  }
  return all;
}

} // namespace zerosearch::validate
