#include "output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"

namespace dpstudy::analyze {

Format parse_format(const std::string& t) {
  if (t == "table") return Format::table;
  if (t == "markdown") return Format::markdown;
  if (t == "csv") return Format::csv;
  if (t == "json") return Format::json;
  throw ConfigError("format", t, "is not one of: table, markdown, csv, json");
}

namespace {

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end && *end == '\0' && s != "nan" && s != "inf" && s != "-inf";
}

}  // namespace

void print(const std::vector<Table>& tables, Format format, std::FILE* out) {
  if (format == Format::json) {
    std::fprintf(out, "[");
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const Table& tb = tables[t];
      std::fprintf(out, "%s\n{\"title\": %s, \"rows\": [", t ? "," : "", json_string(tb.title).c_str());
      for (std::size_t r = 0; r < tb.rows.size(); ++r) {
        std::fprintf(out, "%s\n  {", r ? "," : "");
        for (std::size_t c = 0; c < tb.headers.size(); ++c) {
          const std::string& v = tb.rows[r][c];
          std::fprintf(out, "%s%s: %s", c ? ", " : "", json_string(tb.headers[c]).c_str(),
                      is_number(v) ? v.c_str() : json_string(v).c_str());
        }
        std::fprintf(out, "}");
      }
      std::fprintf(out, "], \"notes\": [");
      for (std::size_t n = 0; n < tb.notes.size(); ++n) std::fprintf(out, "%s%s", n ? ", " : "", json_string(tb.notes[n]).c_str());
      std::fprintf(out, "]}");
    }
    std::fprintf(out, "\n]\n");
    return;
  }
  for (const Table& tb : tables) {
    if (format == Format::csv) {
      for (std::size_t c = 0; c < tb.headers.size(); ++c) std::fprintf(out, "%s%s", c ? "," : "", csv_cell(tb.headers[c]).c_str());
      std::fprintf(out, "\n");
      for (const auto& row : tb.rows) {
        for (std::size_t c = 0; c < row.size(); ++c) std::fprintf(out, "%s%s", c ? "," : "", csv_cell(row[c]).c_str());
        std::fprintf(out, "\n");
      }
      continue;
    }
    std::vector<std::size_t> width(tb.headers.size());
    for (std::size_t c = 0; c < tb.headers.size(); ++c) {
      width[c] = tb.headers[c].size();
      for (const auto& row : tb.rows) width[c] = std::max(width[c], row[c].size());
    }
    if (format == Format::markdown) {
      std::fprintf(out, "**%s**\n\n|", tb.title.c_str());
      for (std::size_t c = 0; c < tb.headers.size(); ++c) std::fprintf(out, " %s |", tb.headers[c].c_str());
      std::fprintf(out, "\n|");
      for (std::size_t c = 0; c < tb.headers.size(); ++c) std::fprintf(out, " %s |", c ? "---:" : "---");
      std::fprintf(out, "\n");
      for (const auto& row : tb.rows) {
        std::fprintf(out, "|");
        for (const auto& cell : row) std::fprintf(out, " %s |", cell.c_str());
        std::fprintf(out, "\n");
      }
      for (const auto& n : tb.notes) std::fprintf(out, "\n%s\n", n.c_str());
      std::fprintf(out, "\n");
      continue;
    }
    std::fprintf(out, "# %s\n#", tb.title.c_str());
    for (std::size_t c = 0; c < tb.headers.size(); ++c) std::fprintf(out, " %*s", int(width[c]), tb.headers[c].c_str());
    std::fprintf(out, "\n");
    for (const auto& row : tb.rows) {
      std::fprintf(out, " ");
      for (std::size_t c = 0; c < row.size(); ++c) std::fprintf(out, " %*s", int(width[c]), row[c].c_str());
      std::fprintf(out, "\n");
    }
    for (const auto& n : tb.notes) std::fprintf(out, "# %s\n", n.c_str());
    std::fprintf(out, "\n");
  }
}

std::string terminal_for(const std::string& output) {
  const std::string ext = std::filesystem::path(output).extension().string();
  if (ext == ".png") return "pngcairo size 900,600 enhanced font 'DejaVu Sans,11'";
  if (ext == ".svg") return "svg size 900,600 enhanced font 'DejaVu Sans,11'";
  throw ConfigError("output", output, "must end in .png or .svg");
}

void run_gnuplot(const std::string& script, const std::string& data, const std::string& output) {
  // A folder that is not there is the user's to fix, not gnuplot's to report.
  std::string folder = std::filesystem::path(output).parent_path().string();
  if (folder.empty()) folder = ".";
  if (::access(folder.c_str(), W_OK) != 0) {
    throw ConfigError("output", output, "is in a folder that does not exist or cannot be written (" + folder + ")");
  }
  const std::string base = temp_folder() + "/dpstudy-plot-" + std::to_string(getpid());
  {
    std::ofstream(base + ".dat") << data;
    std::ofstream(base + ".gp") << "datafile = '" << base << ".dat'\nset output '" << output << "'\n" << script;
  }
  const std::string cmd = "gnuplot '" + base + ".gp' 2>" + base + ".err";
  const int rc = std::system(cmd.c_str());
  std::ifstream err(base + ".err");
  const std::string message((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  std::remove((base + ".dat").c_str());
  std::remove((base + ".gp").c_str());
  std::remove((base + ".err").c_str());
  if (rc != 0) {
    throw UsageError("gnuplot failed (is it installed? apt-get install gnuplot-nox, or spack install gnuplot): " +
                     message);
  }
}

}  // namespace dpstudy::analyze
