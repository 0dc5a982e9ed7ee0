#!/usr/bin/env bash
# LocalStack ready hook: checks that every service the s3q stack deploys to
# answers, so `docker compose up --wait` is healthy only when a deploy can
# succeed. The stack itself (bucket, functions, API, rules) is deployed by
# `make localstack-deploy` with cdklocal, exactly as on AWS.
set -euo pipefail

echo "s3q: checking LocalStack services"
awslocal sts get-caller-identity >/dev/null
awslocal s3api list-buckets >/dev/null
awslocal lambda list-functions --max-items 1 >/dev/null
awslocal apigatewayv2 get-apis >/dev/null || {
  echo "s3q: API Gateway v2 is not available: the s3q stack needs the LocalStack image with an auth token (LOCALSTACK_AUTH_TOKEN)" >&2
  exit 1
}
awslocal events list-event-buses >/dev/null
awslocal cloudformation list-stacks >/dev/null
awslocal logs describe-log-groups --limit 1 >/dev/null
awslocal cloudwatch describe-alarms --max-records 1 >/dev/null
echo "s3q: LocalStack is ready for cdklocal deploy"
