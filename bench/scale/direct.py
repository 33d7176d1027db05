"""A botocore client that, on most calls, hands its parameters to the model without botocore's HTTP
layer, and still answers as botocore would.

botocore builds, signs and sends each request, then parses the answer, and that was most of the
CPU a run of the model took on this host. With the engine's CPU charged from the committed table
(bench/scale/cpu.py), which was measured on the full path, what the host spends no longer decides
what a Lambda is charged: a call may skip that layer. One call in `FULL_PATH_EVERY` of each client
takes botocore's full path all the same, so that the path stays exercised and a request it would
build differently fails the run, and so does every call whose parameters JSON cannot carry as they
are (bytes). The model answers a direct call through the same `Aws._answer` as a sent one: the same
latencies, the same capacity charged, the same segment of CPU ended.

An answer that is an error is parsed by the client's own parser, with a modeled error's fields
as botocore's endpoint adds them, and raised as the client's own exception class. Whether and when
to try again is asked of the client's own retry handler, through the events botocore's endpoint
emits (`needs-retry`, then `after-call`): the standard mode's conditions, backoff and retry quota,
the quota shared with the calls that take the full path.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.hooks import first_non_none_response

FULL_PATH_EVERY = 50
# A direct request's attribute where a model may leave its answer as parsed, instead of a body to
# parse (the request's Python values went to it as JSON; a large answer need not come back so).
ANSWERED = "answered"

Answer = Callable[..., AWSResponse]


class DirectClient:
    """Wraps `client`, whose `before-send` handler is `answer`."""

    def __init__(self, client: Any, answer: Answer) -> None:
        self._client = client
        self._answer = answer
        self._calls = 0
        model = client.meta.service_model
        self._service_id = model.service_id.hyphenize()
        # Only a JSON protocol's body is its parameters as they are (DynamoDB's, SQS's).
        json_protocol = model.protocol == "json"
        self._operations: dict[str, str] = dict(client.meta.method_to_api_mapping) if json_protocol else {}
        self.full_path_calls = 0
        self.direct_calls = 0

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._client, name)
        operation = self._operations.get(name)
        if operation is None:
            return found
        return lambda **params: self._call(name, operation, params)

    def get_paginator(self, operation_name: str) -> Any:
        """The client's paginator, its pages asked through this client: a tick's due rows would
        otherwise take botocore's full path, page by page of up to a megabyte."""
        paginator = self._client.get_paginator(operation_name)
        return type(paginator)(getattr(self, operation_name), paginator._pagination_cfg, paginator._model)

    def _call(self, method: str, operation: str, params: dict[str, Any]) -> Any:
        self._calls += 1
        if self._calls % FULL_PATH_EVERY == 0:
            self.full_path_calls += 1
            return getattr(self._client, method)(**params)
        try:
            body = json.dumps(params).encode()
        except TypeError:  # bytes among the parameters: botocore encodes them
            self.full_path_calls += 1
            return getattr(self._client, method)(**params)
        self.direct_calls += 1
        model = self._client.meta.service_model
        operation_model = model.operation_model(operation)
        request = SimpleNamespace(
            body=body,
            headers={"X-Amz-Target": f"{model.metadata.get('targetPrefix', '')}.{operation}"},
            url=self._client.meta.endpoint_url,
            method="POST",
        )
        events = self._client.meta.events
        context: dict[str, Any] = {}
        attempts = 1
        while True:
            setattr(request, ANSWERED, None)
            response = self._answer(request, event_name=f"before-send.{model.service_name}.{operation}")
            answered = getattr(request, ANSWERED)
            if answered is not None and response.status_code < 300:
                parsed = {**answered, "ResponseMetadata": {"HTTPStatusCode": response.status_code}}
            else:
                parsed = self._parse(response, operation_model)
            delay = first_non_none_response(
                events.emit(
                    f"needs-retry.{self._service_id}.{operation}",
                    response=(response, parsed),
                    endpoint=None,
                    operation=operation_model,
                    attempts=attempts,
                    caught_exception=None,
                    request_dict={"context": context},
                )
            )
            if delay is None or delay is False:
                break
            time.sleep(delay)
            attempts += 1
        parsed.setdefault("ResponseMetadata", {})["RetryAttempts"] = attempts - 1
        events.emit(
            f"after-call.{self._service_id}.{operation}",
            http_response=response,
            parsed=parsed,
            model=operation_model,
            context=context,
        )
        if response.status_code < 300:
            return parsed
        error = parsed.get("Error", {})
        code = error.get("QueryErrorCode") or error.get("Code")
        raise self._client.exceptions.from_code(code)(parsed, operation)

    def _parse(self, response: AWSResponse, operation_model: Any) -> dict[str, Any]:
        content = response.content
        if response.status_code < 300:
            parsed: dict[str, Any] = json.loads(content) if content else {}
            parsed["ResponseMetadata"] = {"HTTPStatusCode": response.status_code}
            return parsed
        parser = self._client._response_parser
        answered = {"status_code": response.status_code, "headers": response.headers, "body": content}
        parsed = parser.parse(answered, operation_model.output_shape)
        code = parsed.get("Error", {}).get("Code")
        error_shape = operation_model.service_model.shape_for_error_code(code) if code else None
        if error_shape is not None:  # a modeled error's own fields, as botocore's endpoint adds them
            parsed.update(parser.parse(answered, error_shape))
        return dict(parsed)
