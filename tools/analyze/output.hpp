// Output of dpstudy-analyze: tables as aligned text, markdown, CSV or JSON, and
// plots through gnuplot.
#pragma once

#include <cstdio>

#include <string>
#include <vector>

namespace dpstudy::analyze {

struct Table {
  std::string title;                      // printed as a '#' line (text, markdown)
  std::vector<std::string> headers;       // with units, e.g. "mean (fraction)"
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;         // '#' lines after the table
};

// latex: a booktabs tabular (\usepackage{booktabs}) per table, its title and notes as comments.
enum class Format { table, markdown, csv, json, latex };
Format parse_format(const std::string& text);
// To `out` (standard output unless given).
void print(const std::vector<Table>& tables, Format format, std::FILE* out = stdout);

// `text` as a gnuplot string: single quotes, each quote in it doubled.
std::string gnuplot_quoted(const std::string& text);
// Runs gnuplot on `script` (which reads the data file `data`), writing `output`
// (.png or .svg). UsageError when gnuplot is missing or fails. For .gp, writes
// the script with its data inline instead, to run elsewhere; gnuplot not needed.
void run_gnuplot(const std::string& script, const std::string& data, const std::string& output);
std::string terminal_for(const std::string& output);

}  // namespace dpstudy::analyze
