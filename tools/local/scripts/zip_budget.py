"""The zip size budget of each function's release artifact (`make build`,
`make bench`): 5 MB, and 6 MB for `surpluses`, whose waybill routes carry
five S3 operations of the AWS SDK (0.87 MB zipped, measured by building it
without them: docs/decisions/runtime.md). The binding limit on a cold start
is the init budget, which `make bench` measures for every function."""

ZIP_BUDGET = 5_000_000
ZIP_BUDGETS = {"surpluses": 6_000_000}


def zip_budget(function: str) -> int:
    return ZIP_BUDGETS.get(function, ZIP_BUDGET)
