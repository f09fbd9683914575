// A subcommand of the nascent CLI. Each command lives in its own file and
// registers itself at start-up (NASCENT_COMMAND), so adding one touches no
// other file. main.cpp builds the CLI11 parser from the registry.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace nascent::cli {

// Declares the subcommand's options on `sub` (binding them to variables the
// returned function captures) and returns what runs when it is chosen; the
// runner's value is the process exit status.
using CommandSetup = std::function<std::function<int()>(CLI::App& sub)>;

struct Command {
  std::string name;
  std::string summary;
  CommandSetup setup;
};

std::vector<Command>& commands();

struct CommandRegistrar {
  explicit CommandRegistrar(Command command) {
    commands().push_back(std::move(command));
  }
};

}  // namespace nascent::cli

#define NASCENT_COMMAND_CAT2(a, b) a##b
#define NASCENT_COMMAND_CAT(a, b) NASCENT_COMMAND_CAT2(a, b)
// NASCENT_COMMAND("name", "one-line summary", setup-lambda)
#define NASCENT_COMMAND(name, summary, setup)                  \
  static ::nascent::cli::CommandRegistrar NASCENT_COMMAND_CAT( \
      nascent_command_, __LINE__) {                            \
    ::nascent::cli::Command {                                  \
      name, summary, setup                                     \
    }                                                          \
  }
