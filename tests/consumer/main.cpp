// Uses only torch-free headers, so the consumer builds in seconds; linking
// dpstudy::dpstudy still pulls in every dependency through the package config.
#include <dpstudy/build_info.hpp>
#include <dpstudy/config.hpp>
#include <dpstudy/fixtures.hpp>
#include <dpstudy/manifest.hpp>
#include <dpstudy/sha256.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  const dpstudy::BuildInfo b = dpstudy::build_info();
  const bool sha_ok = dpstudy::Sha256::of("abc", 3) ==
                      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  const std::string dir = std::string(argc > 1 ? argv[1] : ".") + "/consumer-fixtures";
  dpstudy::write_fixtures(dir, {200, 50, 1, true});  // enough for the workload test to train on
  const auto m = dpstudy::Manifest::load(dir + "/manifest.tsv");
  const bool fixtures_ok = m.entries().size() == 14 && std::filesystem::exists(dir + "/cifar10/test_batch.bin");
  std::printf("consumer: dpstudy %s (%s), MPI %d, sha256(abc) %s, fixtures %s\n", b.version.c_str(),
              DPSTUDY_VERSION, DPSTUDY_WITH_MPI, sha_ok ? "ok" : "WRONG", fixtures_ok ? "ok" : "WRONG");
  return sha_ok && fixtures_ok ? 0 : 1;
}
