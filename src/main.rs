//! The `storlab` binary: parses the command line and hands it to the library.

fn main() {
    std::process::exit(storlab_cli::main(option_env!("STORLAB_GIT_COMMIT")));
}
