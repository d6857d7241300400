#include "output.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "dpstudy/error.hpp"
#include "dpstudy/file_io.hpp"

namespace dpstudy::analyze {

Format parse_format(const std::string& t) {
  if (t == "table") return Format::table;
  if (t == "markdown") return Format::markdown;
  if (t == "csv") return Format::csv;
  if (t == "json") return Format::json;
  if (t == "latex") return Format::latex;
  throw ConfigError("format", t, "is not one of: table, markdown, csv, json, latex");
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

// Text mode: LaTeX's ten special characters, and < > (other glyphs in the default font encoding).
std::string latex_cell(const std::string& s) {
  if (s == "-") return "--";  // no value: an en dash (a lone hyphen reads as a stray mark)
  if (s == "inf") return "$\\infty$";  // an interval open above
  std::string out = s.rfind('[', 0) == 0 ? "{}" : "";  // not read as the optional argument of the \\ before it
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    // A number's sign as a minus, not a hyphen: -0.5, [-0.02, 0.04] (not 1e-05, Kruskal-Wallis, b - a).
    const bool sign = c == '-' && i + 1 < s.size() && (std::isdigit(static_cast<unsigned char>(s[i + 1])) ||
                                                       s[i + 1] == '.') &&
                      (i == 0 || s[i - 1] == ' ' || s[i - 1] == '[' || s[i - 1] == '(');
    if (sign) {
      out += "$-$";
      continue;
    }
    switch (c) {
      case '&': case '%': case '$': case '#': case '_': case '{': case '}': out += std::string("\\") + c; break;
      case '\\': out += "\\textbackslash{}"; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '<': out += "\\textless{}"; break;
      case '>': out += "\\textgreater{}"; break;
      default: out += c;
    }
  }
  return out;
}

// A comment line per line of `text`.
void latex_comment(std::FILE* out, const std::string& text) {
  std::size_t at = 0;
  do {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::fprintf(out, "%% %s\n", text.substr(at, end - at).c_str());
    at = end + 1;
  } while (at < text.size());
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
    if (format == Format::latex) {
      // As the markdown: the first column left, the others right (numbers).
      latex_comment(out, tb.title);
      const std::string numbers(tb.headers.empty() ? 0 : tb.headers.size() - 1, 'r');
      std::fprintf(out, "\\begin{tabular}{l%s}\n\\toprule\n", numbers.c_str());
      for (std::size_t c = 0; c < tb.headers.size(); ++c) {
        std::fprintf(out, "%s%s", c ? " & " : "", latex_cell(tb.headers[c]).c_str());
      }
      std::fprintf(out, " \\\\\n\\midrule\n");
      for (const auto& row : tb.rows) {
        for (std::size_t c = 0; c < row.size(); ++c) {
          std::fprintf(out, "%s%s", c ? " & " : "", latex_cell(row[c]).c_str());
        }
        std::fprintf(out, " \\\\\n");
      }
      std::fprintf(out, "\\bottomrule\n\\end{tabular}\n");
      for (const auto& n : tb.notes) latex_comment(out, n);
      std::fprintf(out, "\n");
      continue;
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
      std::string line = " ";
      for (std::size_t c = 0; c < row.size(); ++c) line += " " + std::string(width[c] - row[c].size(), ' ') + row[c];
      line.erase(line.find_last_not_of(' ') + 1);  // empty last cells (an ANOVA's residual row) pad nothing
      std::fprintf(out, "%s\n", line.c_str());
    }
    for (const auto& n : tb.notes) std::fprintf(out, "# %s\n", n.c_str());
    std::fprintf(out, "\n");
  }
}

std::string terminal_for(const std::string& output) {
  const std::string ext = std::filesystem::path(output).extension().string();
  if (ext == ".png") return "pngcairo size 900,600 enhanced font 'DejaVu Sans,11'";
  if (ext == ".svg" || ext == ".gp") return "svg size 900,600 enhanced font 'DejaVu Sans,11'";
  throw ConfigError("output", output, "must end in .png, .svg or .gp (the gnuplot script that draws an SVG)");
}

namespace {

// F.gp: the script with its data inline, run by nobody here. It draws elsewhere
// (where the runs are not, as on a GPU machine without gnuplot), or after an edit
// for a paper's fonts and labels: `gnuplot F.gp` writes F.svg beside it.
void write_gnuplot_script(const std::string& script, const std::string& data, const std::string& output) {
  const std::string block = data + (data.empty() || data.back() == '\n' ? "" : "\n");  // whole lines
  if (("\n" + block).find("\nEOD\n") != std::string::npos) {
    throw Error("the figure's data holds a line EOD, which would end its block in " + output);
  }
  const std::string text =
      "# Drawn by dpstudy-analyze plot; `gnuplot " + std::filesystem::path(output).filename().string() +
      "` writes the SVG beside this file.\n$data << EOD\n" + block +
      "EOD\ndatafile = '$data'\n"
      "set output (strlen(ARG0) > 3 ? ARG0[1:strlen(ARG0) - 3] : 'plot') . '.svg'\n" +
      script;
  std::ofstream f(output);
  if (!f) throw ConfigError("output", output, std::string("cannot be written: ") + std::strerror(errno));
  f << text;
  f.close();
  if (!f) throw ConfigError("output", output, "could not be written whole (a full disk?)");
}

}  // namespace

std::string gnuplot_quoted(const std::string& text) {
  std::string q = "'";  // in gnuplot's single quotes nothing is special but the quote, written twice
  for (char c : text) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

void run_gnuplot(const std::string& script, const std::string& data, const std::string& output) {
  // A folder that is not there is the user's to fix, not gnuplot's to report.
  std::string folder = std::filesystem::path(output).parent_path().string();
  if (folder.empty()) folder = ".";
  if (::access(folder.c_str(), W_OK) != 0) {
    throw ConfigError("output", output, "is in a folder that does not exist or cannot be written (" + folder + ")");
  }
  if (output.find_first_of("\n\r") != std::string::npos) {
    throw ConfigError("output", output, "has a line break in its name, which a gnuplot script cannot hold");
  }
  if (std::filesystem::path(output).extension() == ".gp") return write_gnuplot_script(script, data, output);
  // A folder of our own for the script, its data and gnuplot's messages: no
  // clash between plots made at once, whatever $TMPDIR's name holds.
  std::string scratch = temp_folder() + "/dpstudy-plot-XXXXXX";
  if (::mkdtemp(scratch.data()) == nullptr) {
    throw DataError(temp_folder(), std::string("cannot create a scratch folder for gnuplot here: ") +
                                       std::strerror(errno) + " (set TMPDIR to a writable folder)");
  }
  struct Remove {
    std::string dir;
    ~Remove() { remove_tree(dir); }
  } remove{scratch};
  const std::string gp = scratch + "/plot.gp", dat = scratch + "/plot.dat", err = scratch + "/gnuplot.err";
  for (const auto& [path, text] : {std::pair<std::string, std::string>{dat, data},
                                   {gp, "datafile = " + gnuplot_quoted(dat) + "\nset output " +
                                            gnuplot_quoted(output) + "\n" + script}}) {
    std::ofstream f(path);
    f << text;
    f.close();
    if (!f) throw DataError(path, "cannot write the plot's input (a full disk?); set TMPDIR elsewhere");
  }
  // gnuplot run directly, not through a shell, so that no name is ever parsed as a command.
  const pid_t child = ::fork();
  if (child < 0) throw Error(std::string("cannot start gnuplot: fork failed: ") + std::strerror(errno));
  if (child == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) ::dup2(fd, STDERR_FILENO);
    ::execlp("gnuplot", "gnuplot", gp.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::ifstream in(err);
  const std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && message.empty()) {
    throw UsageError("gnuplot was not found on the PATH: apt-get install gnuplot-nox, or spack install gnuplot");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw UsageError("gnuplot failed writing " + output + ": " + message);
  }
}

}  // namespace dpstudy::analyze
