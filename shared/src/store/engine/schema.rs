//! The table, bucket and queues of the local stack. In AWS they come from
//! `infra/template.yaml`, which declares the same table (a test compares them).

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};

use crate::store::engine::keys::{PK, SK, TTL};

/// The generic, overloaded GSIs (see docs/data-model.md).
pub const GSIS: [&str; 3] = ["gsi1", "gsi2", "gsi3"];

pub type SetupError = Box<dyn std::error::Error + Send + Sync>;

/// Creates the table (with its GSIs and TTL) unless it exists.
pub async fn ensure_table(db: &aws_sdk_dynamodb::Client, table: &str) -> Result<bool, SetupError> {
    if db.describe_table().table_name(table).send().await.is_ok() {
        return Ok(false);
    }
    let string_attr = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
    };
    let key = |name: &str, kind: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
    };
    let mut request = db
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(string_attr(PK)?)
        .attribute_definitions(string_attr(SK)?)
        .key_schema(key(PK, KeyType::Hash)?)
        .key_schema(key(SK, KeyType::Range)?);
    for gsi in GSIS {
        let (pk, sk) = (format!("{gsi}pk"), format!("{gsi}sk"));
        request = request
            .attribute_definitions(string_attr(&pk)?)
            .attribute_definitions(string_attr(&sk)?)
            .global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(gsi)
                    .key_schema(key(&pk, KeyType::Hash)?)
                    .key_schema(key(&sk, KeyType::Range)?)
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .build()?,
            );
    }
    match request.send().await {
        Ok(_) => {}
        // Another process created it at the same moment.
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            return Ok(false);
        }
        Err(e) => {
            return Err(aws_sdk_dynamodb::error::DisplayErrorContext(e)
                .to_string()
                .into());
        }
    }
    db.update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(TTL)
                .build()?,
        )
        .send()
        .await
        .map_err(|e| aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string())?;
    Ok(true)
}

/// Creates the bucket unless it exists, and versions it as the deployed
/// one is (a waybill confirmation copies the version it checked).
pub async fn ensure_bucket(s3: &aws_sdk_s3::Client, bucket: &str) -> Result<bool, SetupError> {
    if s3.head_bucket().bucket(bucket).send().await.is_ok() {
        version(s3, bucket).await?;
        return Ok(false);
    }
    let region = s3
        .config()
        .region()
        .map(|r| r.to_string())
        .unwrap_or_default();
    let mut request = s3.create_bucket().bucket(bucket);
    if region != "us-east-1" && !region.is_empty() {
        request = request.create_bucket_configuration(
            aws_sdk_s3::types::CreateBucketConfiguration::builder()
                .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::from(
                    region.as_str(),
                ))
                .build(),
        );
    }
    let created = match request.send().await {
        Ok(_) => true,
        // Another process created it at the same moment (a nextest run's
        // first tests, each a process, over fresh engines).
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_bucket_already_owned_by_you()) =>
        {
            false
        }
        Err(e) => return Err(aws_sdk_s3::error::DisplayErrorContext(e).to_string().into()),
    };
    version(s3, bucket).await?;
    Ok(created)
}

async fn version(s3: &aws_sdk_s3::Client, bucket: &str) -> Result<(), SetupError> {
    s3.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .map_err(|e| aws_sdk_s3::error::DisplayErrorContext(e).to_string())?;
    Ok(())
}

/// Creates a queue (idempotent in SQS) and returns its URL.
pub async fn ensure_queue(sqs: &aws_sdk_sqs::Client, name: &str) -> Result<String, SetupError> {
    let out = sqs
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(e).to_string())?;
    Ok(out.queue_url().unwrap_or_default().to_owned())
}
