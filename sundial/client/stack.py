"""The API URL of a deployed stack: its CloudFormation output `ApiUrl` (infra/stack.py)."""

from __future__ import annotations

from typing import Any

from sundial.client.errors import ApiError, NotFound, Unauthorized

API_URL_OUTPUT = "ApiUrl"


def api_url_of_stack(stack: str, *, profile: str | None = None, region: str | None = None) -> str:
    """Raises NotFound for a stack or output that does not exist, Unauthorized without credentials
    or permission, ApiError for anything else CloudFormation answers."""
    # Imported here: only `--stack` needs boto3's CloudFormation client.
    import boto3  # noqa: PLC0415
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError  # noqa: PLC0415

    try:
        cloudformation: Any = boto3.Session(profile_name=profile, region_name=region).client("cloudformation")
        (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except NoCredentialsError as exc:
        raise Unauthorized(f"no AWS credentials to read stack '{stack}'", field="stack") from exc
    except ClientError as exc:
        raise _stack_error(stack, exc.response) from exc
    except BotoCoreError as exc:
        raise ApiError(f"cannot read stack '{stack}': {exc}", field="stack") from exc
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    if API_URL_OUTPUT not in outputs:
        raise NotFound(
            f"stack '{stack}' has no {API_URL_OUTPUT} output (is it a Sundial stack?)", field="stack"
        )
    return str(outputs[API_URL_OUTPUT])


def _stack_error(stack: str, response: Any) -> ApiError:
    error = response.get("Error", {})
    message = f"stack '{stack}': {error.get('Message') or error.get('Code')}"
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if "does not exist" in str(error.get("Message")):
        return NotFound(message, "stack", status)
    if error.get("Code") in ("AccessDenied", "AccessDeniedException", "ExpiredToken", "InvalidClientTokenId"):
        return Unauthorized(message, "stack", status)
    return ApiError(message, "stack", status)
