// The nascent command line: one subcommand per file (see command.h). With
// no arguments it runs the default command, the project's main job.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "apps/nascent/launch.h"
#include "nascent/core/error.h"

namespace nascent::cli {

std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

}  // namespace nascent::cli

namespace {

constexpr const char* kDefaultCommand = "train";

}  // namespace

int main(int argc, char** argv) {
  using nascent::cli::commands;
  CLI::App app{"nascent: train and run deep-learning models natively"};
  app.require_subcommand(0, 1);
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (const auto& c : commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    runners.emplace_back(sub, c.setup(*sub));
  }
  // llama.cpp's two-letter single-dash flags (-np, -md), which CLI11 cannot
  // name.
  std::vector<std::string> args(argv + 1, argv + argc);
  nascent::cli::program_arguments() = args;
  for (std::string& a : args) {
    if (a == "-np") a = "--np";
    if (a == "-md") a = "--model-draft";
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first.
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners) {
      if (sub->parsed()) return run();
    }
    for (auto& [sub, run] : runners) {
      if (sub->get_name() == kDefaultCommand) return run();
    }
    fmt::print(stderr, "nascent: no default command\n");
    return 2;
  } catch (const nascent::Error& e) {
    fmt::print(stderr, "nascent: {}\n", e.what());
    return 1;
  }
}
