// The validation corpus: published measured runs, one tab-separated file per independent source
// group (validation/corpus/<group>.tsv, format in validation/README.md). The file name is
// the source group that leave-one-source-out holds out.
#pragma once

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace zerosearch::validate {

/// Bad input to the validator: a one-line message, exit 2.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One row of a corpus file: its source group (the file's stem), its 1-based row number in the
/// file, and its fields by column name (missing columns read as empty).
struct Row {
  std::string group;
  int line = 0;
  std::map<std::string, std::string> fields;
  /// The field, or "" when the file has no such column.
  const std::string& at(const std::string& column) const;
};

/// One field of a tab-separated row, unquoted the way the csv module quotes ("" inside "...").
std::string unquote(const std::string& field);

/// The rows of one tab-separated file with a header line; group = the file's stem.
std::vector<Row> read_corpus_file(const std::filesystem::path& file);

/// The *.tsv files of a folder, sorted by name (none when the folder does not exist).
std::vector<std::filesystem::path> corpus_files(const std::filesystem::path& folder);

/// The rows of all files, in the order given. Two files with the same stem are one error.
std::vector<Row> load_corpus(const std::vector<std::filesystem::path>& files);

} // namespace zerosearch::validate
