//! Operator CLI. Talks to DynamoDB directly through the standard AWS
//! configuration chain (`AWS_PROFILE`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//! `AWS_ENDPOINT_URL_DYNAMODB`, ...); the commands are `admin::cli`.
//! Output: one JSON object per line on stdout; errors on stderr, exit 1.
//! Every command that changes something is audited (`admin::audit`): a
//! record in the table before it acts and one of its outcome before it
//! answers, naming the caller's AWS identity (and, with `ADMIN_ROLE_ARN`
//! and `ADMIN_SOURCE_IDENTITY`, the role assumed with that source
//! identity: `admin::identity`); `admin audit list` reads them.

use anyhow::Result;
use clap::Parser;
use serde_json::json;
use shared::config::Config;

use admin::cli::Cli;

#[tokio::main]
async fn main() {
    if let Err(error) = run(Cli::parse()).await {
        eprintln!("{}", json!({"error": format!("{error:#}")}));
        std::process::exit(1);
    }
}

async fn run(cli: Cli) -> Result<()> {
    let config = Config::from_env()?;
    let sdk = shared::aws::sdk_config(config.sdk_limits).await;
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let endpoints =
        shared::endpoints::configured(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if !endpoints.is_empty() {
        let shown: Vec<String> = endpoints.iter().map(|(k, v)| format!("{k}={v}")).collect();
        eprintln!(
            "admin: using endpoints {}, table {}",
            shown.join(" "),
            config.store.table
        );
    }
    let operator = admin::identity::Operator::from_env(&sdk).await?;
    for line in admin::cli::run_as(cli.command, &config, &operator)
        .await?
        .lines
    {
        println!("{line}");
    }
    Ok(())
}
