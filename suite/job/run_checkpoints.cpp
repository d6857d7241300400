#include "run_checkpoints.hpp"

#include <cstdio>
#include <filesystem>

#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"

namespace fs = std::filesystem;

namespace dpstudy {

RunCheckpoints::RunCheckpoints(std::string runs_dir) : runs_dir_(std::move(runs_dir)) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(runs_dir_, ec)) {
    const std::string name = entry.path().filename().string();
    const auto at = name.find(".ckpt.");
    if (at != std::string::npos && entry.path().extension() == ".h5") {
      files_[name.substr(0, at)].push_back(entry.path().string());
    }
  }
}

std::string RunCheckpoints::path(const std::string& id, int procs, int rank) const {
  const std::string name = procs == 1 ? id + ".ckpt.h5"
                                      : id + ".ckpt.r" + std::to_string(rank) + "of" + std::to_string(procs) + ".h5";
  return (fs::path(runs_dir_) / name).string();
}

std::optional<std::int64_t> RunCheckpoints::set_step(const std::string& id, int procs) const {
  std::int64_t step = -1;
  for (int q = 0; q < procs; ++q) {
    std::int64_t s = -1;
    try {
      s = h5::File::open_read(path(id, procs, q)).root().get_int("step");
    } catch (const Error&) {
      return std::nullopt;  // missing or unreadable
    }
    if (step >= 0 && s != step) return std::nullopt;
    step = s;
  }
  return step;
}

std::set<int> RunCheckpoints::layouts(const std::string& id) const {
  std::set<int> out;
  const auto files = files_.find(id);
  if (files == files_.end()) return out;
  for (const std::string& f : files->second) {
    int rank = 0, procs = 0;
    const std::string name = fs::path(f).filename().string();
    if (std::sscanf(name.c_str() + id.size(), ".ckpt.r%dof%d.h5", &rank, &procs) == 2 && procs > 1) {
      out.insert(procs);
    } else if (name == id + ".ckpt.h5") {
      out.insert(1);
    }
  }
  return out;
}

void RunCheckpoints::remove(const std::string& id, int procs) const {
  std::error_code ec;
  for (int q = 0; q < procs; ++q) fs::remove(path(id, procs, q), ec);
  if (const auto old = files_.find(id); old != files_.end()) {
    for (const auto& f : old->second) fs::remove(f, ec);  // also another layout's
  }
}

}  // namespace dpstudy
