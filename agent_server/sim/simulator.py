"""The simulator: state (models, scenario, faults, caches, clock, request log) and its HTTP app.

Routes (base URL for the Anthropic SDK: `http://host:port`; for OpenAI: `http://host:port/v1`):

- `POST /v1/messages`, `POST /v1/messages/count_tokens`: Anthropic Messages;
- `POST /v1/chat/completions`: OpenAI Chat Completions;
- `POST /v1/responses`: OpenAI Responses;
- `GET /v1/models`, `GET /v1/models/{id}`: Anthropic's format when the request has an
  `anthropic-version` header (the Anthropic SDK always sends one), OpenAI's otherwise;
- `GET|POST /_sim/faults`, `GET /_sim/records`, `POST /_sim/reset`: control, for tests and
  demos (no API key needed).

Every `/v1` request needs an API key (`x-api-key` or `Authorization: Bearer`; any value).
Nothing a client sends crashes the server: a malformed body is a 400 in the API's own shape, an
unexpected failure a 500.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from agent_server.llm.models import BUILTIN_MODELS, ModelInfo, ModelRegistry
from agent_server.sim import anthropic_api, openai_chat, openai_errors, openai_responses
from agent_server.sim.anthropic_context import CompactEdit
from agent_server.sim.cache import AnthropicPromptCache, CacheUsage, OpenAIPromptCache
from agent_server.sim.compaction import (
    compaction_summary,
    handed_over,
    instruction_tokens,
    sign,
    summary_tokens,
)
from agent_server.sim.faults import Fault, FaultDecision, FaultInjector, FaultPlan, parse_faults
from agent_server.sim.generation import Generation, ThinkingMode, generate, paused
from agent_server.sim.knowledge import FactCheck
from agent_server.sim.records import RequestLog, RequestRecord, TokenCounts
from agent_server.sim.rejection import RequestRejected
from agent_server.sim.responder import PlannedReply, Refetches, plan_reply
from agent_server.sim.scenario import Scenario, default_scenario, load_scenario
from agent_server.sim.sse import ChunkedResponse, install_drop_log_filter, json_bytes
from agent_server.sim.summary import SUMMARY_MODES, SummaryMode
from agent_server.sim.transcript import Transcript, TranscriptMessage

log = logging.getLogger(__name__)

ApiName = Literal["anthropic", "openai"]
_STORED_RESPONSES = 512
_OPENAI_NO_KEY = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header "
    "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with "
    "blank username) if you're accessing the API from your browser and are prompted for a "
    "username and password. You can obtain an API key from "
    "https://platform.openai.com/account/api-keys."
)
_OPENAI_BAD_JSON = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
    "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was "
    "not valid JSON. If you have trouble figuring out how to fix this, please contact us "
    "through our help center at help.openai.com.)"
)


@dataclass(frozen=True, slots=True)
class _Answer:
    """A successful answer, ready to send."""

    chunks: list[bytes]
    streaming: bool
    model: str
    usage: Any
    tokens: TokenCounts | None
    stop_reason: str | None
    source: str | None
    knowledge: tuple[FactCheck, ...] = ()
    compactions: int = 0  # compactions the provider made while answering
    skipped: tuple[str, ...] = ()


class _Malformed(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class Simulator:
    """A simulated model provider. `app` is its ASGI app; `records` its request log."""

    def __init__(
        self,
        *,
        models: Iterable[ModelInfo] = (),
        scenario: Scenario | Path | None = None,
        faults: str | FaultPlan | None = None,
        clock: Callable[[], float] = time.time,
        log_path: Path | None = None,
        builtin_models: bool = True,
        keep_records: int | None = None,
        summariser: SummaryMode = "faithful",
        summary_chars: int | None = None,
    ) -> None:
        if summariser not in SUMMARY_MODES:
            raise ValueError(f"summariser: expected one of {', '.join(SUMMARY_MODES)}")
        if summary_chars is not None and summary_chars < 1:
            raise ValueError("summary_chars: expected a positive number of characters")
        self.summariser: SummaryMode = summariser
        self.summary_chars = summary_chars
        self.registry = ModelRegistry(BUILTIN_MODELS if builtin_models else ())
        for model in models:
            self.registry.add(model)
        if scenario is None:
            self.scenario = default_scenario()
        elif isinstance(scenario, Path):
            self.scenario = load_scenario(scenario)
        else:
            self.scenario = scenario
        self.clock = clock
        self.faults = FaultInjector()
        self.set_faults(faults)
        self.anthropic_cache = AnthropicPromptCache(clock)
        self.openai_cache = OpenAIPromptCache(clock)
        self._log = RequestLog(log_path, keep=keep_records)
        self._responses: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._serial = 0
        self._refetches = Refetches()
        install_drop_log_filter()
        self.app: ASGIApp = self._build_app()

    # --- control ----------------------------------------------------------------------------

    @property
    def records(self) -> list[RequestRecord]:
        return self._log.records

    def set_faults(self, faults: str | FaultPlan | None) -> None:
        """Install a fault plan (a spec string, see faults.py); indices restart at 1."""
        plan = faults if isinstance(faults, FaultPlan) else parse_faults(faults)
        self.faults.install(plan)

    def reset(self) -> None:
        """Forget every cached prefix, stored response and fetch counted (records stay)."""
        self.anthropic_cache.clear()
        self.openai_cache.clear()
        self._responses.clear()
        self._refetches.clear()

    def close(self) -> None:
        self._log.close()

    # --- the app ----------------------------------------------------------------------------

    def _build_app(self) -> Starlette:
        routes = [
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/responses", self._responses_endpoint, methods=["POST"]),
            Route("/v1/responses/compact", self._compact_endpoint, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", self._model, methods=["GET"]),
            Route("/_sim/faults", self._faults_endpoint, methods=["GET", "POST"]),
            Route("/_sim/records", self._records_endpoint, methods=["GET"]),
            Route("/_sim/reset", self._reset_endpoint, methods=["POST"]),
        ]
        return Starlette(
            routes=routes,
            exception_handlers={HTTPException: self._http_error},  # type: ignore[dict-item]
        )

    async def _http_error(self, request: Request, exc: HTTPException) -> Response:
        """A path or method the simulator does not serve: the API's 404/405, in the log too."""
        api = _api_of(request)
        message = f"Not found: {request.method} {request.url.path}" if exc.status_code == 404 \
            else f"Method {request.method} not allowed on {request.url.path}"
        error_type = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        rejection = RequestRejected(exc.status_code, message, error_type)
        request_id = self._next_id()
        _, logged = _decode(await request.body())
        self._record({"method": request.method, "path": request.url.path, "api": "unrouted",
                      "request": logged or None, "request_id": request_id},
                     exc.status_code, error=message)
        body = (anthropic_api.error_body(rejection, request_id) if api == "anthropic"
                else openai_errors.error_body(rejection))
        return JSONResponse(body, exc.status_code, headers=_id_header(api, request_id))

    # --- model endpoints --------------------------------------------------------------------

    async def _messages(self, request: Request) -> ASGIApp:
        return await self._model_call(request, "anthropic", "anthropic-messages",
                                      self._answer_messages)

    async def _chat(self, request: Request) -> ASGIApp:
        return await self._model_call(request, "openai", "openai-chat", self._answer_chat)

    async def _responses_endpoint(self, request: Request) -> ASGIApp:
        return await self._model_call(request, "openai", "openai-responses",
                                      self._answer_responses)

    async def _compact_endpoint(self, request: Request) -> ASGIApp:
        return await self._model_call(request, "openai", "openai-responses-compact",
                                      self._answer_compact)

    async def _model_call(
        self,
        request: Request,
        api: ApiName,
        api_name: str,
        answer: Callable[[Any, Fault | None, str, Request], _Answer],
    ) -> ASGIApp:
        request_id = self._next_id()
        raw = await request.body()
        body, logged = _decode(raw)
        base = {"method": request.method, "path": request.url.path, "api": api_name,
                "request": logged, "request_id": request_id}
        model_name = body.get("model") if isinstance(body, dict) else None
        model = model_name if isinstance(model_name, str) else None
        stream = bool(body.get("stream")) if isinstance(body, dict) else False
        if not _has_key(request, api):
            rejection = _no_key(api)
            self._record(base, rejection.status, model=model, stream=stream,
                         error=rejection.message)
            return self._error_response(api, rejection, request_id, 0.0)

        decision = self.faults.next_request()
        fault = decision.fault
        if fault is not None and fault.kind in ("429", "529", "500", "401", "403"):
            rejection = _fault_rejection(api, fault)
            self._record(base, rejection.status, index=decision.index, model=model,
                         stream=stream, fault=decision.describe(), error=rejection.message)
            return self._error_response(api, rejection, request_id, decision.delay)
        try:
            if isinstance(body, _Malformed):
                raise _malformed_rejection(api, body.detail)
            result = answer(body, fault, request_id, request)
        except RequestRejected as rejection:
            self._record(base, rejection.status, index=decision.index, model=model,
                         stream=stream, fault=decision.describe(), error=rejection.message)
            return self._error_response(api, rejection, request_id, decision.delay)
        except Exception as exc:  # never let a request take the server down
            log.exception("simulator failed on %s", request.url.path)
            failure = RequestRejected(500, f"Internal simulator error: {exc}",
                                      "api_error" if api == "anthropic" else "server_error")
            self._record(base, 500, index=decision.index, model=model, stream=stream,
                         fault=decision.describe(), error=failure.message)
            return self._error_response(api, failure, request_id, decision.delay)
        self._record(base, 200, index=decision.index, model=result.model,
                     stream=result.streaming, usage=result.usage, tokens=result.tokens,
                     stop_reason=result.stop_reason, fault=decision.describe(),
                     source=result.source, knowledge=result.knowledge,
                     compactions=result.compactions, skipped=result.skipped)
        return self._answer_response(api, result, request_id, decision)

    def _answer_messages(self, body: Any, fault: Fault | None, request_id: str,
                         http: Request) -> _Answer:
        betas = anthropic_api.betas_of(http.headers.get("anthropic-beta"))
        request = anthropic_api.parse_request(body, self.registry, betas=betas)
        model = request.model
        prompt = request.prompt_tokens
        if prompt > model.context_window or _forced_overflow(fault):
            raise anthropic_api.prompt_too_long(max(prompt, model.context_window + 1),
                                                model.context_window)
        message_id = f"msg_sim_{request_id.removeprefix('req_sim_')}"
        compact = request.context.compact if request.context is not None else None
        if request.on_demand is not None:
            return self._compact_on_demand(request, message_id)
        if compact is not None and prompt > compact.trigger:
            return self._compact_then_answer(request, compact, message_id)
        usage = self.anthropic_cache.apply(model.id, model.min_cache_tokens, request.blocks)
        reply, generation = self._reply(request.transcript, "toolu", model, prompt,
                                         request.max_tokens,
                                         "shown" if request.thinking else "none")
        if fault is not None and fault.kind == "pause":
            generation = paused(generation)
        answer = anthropic_api.MessageAnswer.of(generation, usage, request)
        return self._messages_answer(request, message_id, answer, reply,
                                     TokenCounts.of(usage, generation.output_tokens,
                                                    generation.reasoning_tokens))

    def _messages_answer(self, request: anthropic_api.MessagesRequest, message_id: str,
                         answer: anthropic_api.MessageAnswer, reply: PlannedReply | None,
                         tokens: TokenCounts, compactions: int = 0) -> _Answer:
        model = request.model
        if request.stream:
            chunks = anthropic_api.stream_events(message_id, model.id, answer)
        else:
            chunks = [json_bytes(anthropic_api.message_json(message_id, model.id, answer))]
        return _Answer(
            chunks=chunks,
            streaming=request.stream,
            model=model.id,
            usage=answer.usage,
            tokens=tokens,
            stop_reason=answer.stop_reason,
            source=reply.source if reply is not None else "summary",
            knowledge=reply.knowledge if reply is not None else (),
            compactions=compactions,
            skipped=reply.skipped if reply is not None else (),
        )

    def _compaction_pass(self, request: anthropic_api.MessagesRequest,
                         instructions: str | None, *, write: bool
                         ) -> tuple[str, CacheUsage, int]:
        """(summary, prompt usage, output tokens) of the provider's own summary of what the
        request renders: its prompt (read from the cache; written too when `write`, as a
        request of the client's own) and the instruction, at the input price."""
        model = request.model
        summary = compaction_summary(request.transcript, instructions, self.summariser)
        read = self.anthropic_cache.apply(model.id, model.min_cache_tokens, request.blocks,
                                          write=write)
        usage = CacheUsage(input=read.input + instruction_tokens(instructions),
                           cache_read=read.cache_read, cache_write_5m=read.cache_write_5m,
                           cache_write_1h=read.cache_write_1h)
        return summary, usage, summary_tokens(summary)

    def _compact_on_demand(self, request: anthropic_api.MessagesRequest,
                           message_id: str) -> _Answer:
        """`compaction: {type: "summarize"}`: the answer is the signed compaction block alone
        (stop reason "compaction"); its cost is only in `usage.iterations`."""
        assert request.on_demand is not None
        summary, usage, output = self._compaction_pass(request, request.on_demand.instructions,
                                                       write=True)
        block = {"type": "compaction", "content": summary, "signature": sign(summary)}
        iteration = anthropic_api.iteration_json("compaction", usage, output)
        answer = anthropic_api.MessageAnswer(
            None, anthropic_api.compacted_usage_json(iteration, None), "compaction", block)
        return self._messages_answer(request, message_id, answer, None,
                                     TokenCounts.of(usage, output), compactions=1)

    def _compact_then_answer(self, request: anthropic_api.MessagesRequest,
                             compact: CompactEdit, message_id: str) -> _Answer:
        """The `compact_20260112` edit triggered: the provider summarises what the request
        renders (reading the cached prefix, writing nothing: no later request begins with
        it), then answers from the tools, the system prompt and the compaction block alone,
        unless `pause_after_compaction` hands the block back first."""
        model = request.model
        summary, usage, output = self._compaction_pass(request, compact.instructions,
                                                       write=False)
        block = {"type": "compaction", "content": summary}
        compaction = anthropic_api.iteration_json("compaction", usage, output)
        spent = TokenCounts.of(usage, output)
        if compact.pause:
            answer = anthropic_api.MessageAnswer(
                None, anthropic_api.compacted_usage_json(compaction, None), "compaction", block,
                anthropic_api.context_management_json(request))
            return self._messages_answer(request, message_id, answer, None, spent, 1)
        blocks = (*request.blocks[: request.prefix_blocks],
                  anthropic_api.opening_block(request.header, block, summary_tokens(summary)))
        after = self.anthropic_cache.apply(model.id, model.min_cache_tokens, blocks)
        transcript = Transcript(request.transcript.system, request.transcript.tools,
                                (TranscriptMessage("user", (handed_over(summary),)),))
        prompt = sum(item.tokens for item in blocks)
        reply, generation = self._reply(transcript, "toolu", model, prompt, request.max_tokens,
                                         "shown" if request.thinking else "none")
        message = anthropic_api.iteration_json("message", after, generation.output_tokens)
        answer = anthropic_api.MessageAnswer(
            generation, anthropic_api.compacted_usage_json(compaction, message),
            anthropic_api.stop_reason(generation), block,
            anthropic_api.context_management_json(request))
        total = TokenCounts.of(after, generation.output_tokens, generation.reasoning_tokens)
        return self._messages_answer(request, message_id, answer, reply, spent.plus(total), 1)

    def _answer_chat(self, body: Any, fault: Fault | None, request_id: str,
                     http: Request) -> _Answer:
        request = openai_chat.parse_request(body, self.registry)
        model = request.model
        prompt = request.prompt_tokens
        if prompt > model.context_window or _forced_overflow(fault):
            raise openai_chat.context_length_exceeded(max(prompt, model.context_window + 1),
                                                      model.context_window)
        _refuse_too_large(fault, model, prompt + request.max_tokens)
        usage = _cut_to_num_ctx(fault, self.openai_cache.apply(model.id, request.cache,
                                                               request.blocks))
        reply, generation = self._reply(request.transcript, "call", model, prompt,
                                         request.max_tokens,
                                         "hidden" if model.reasoning else "none")
        completion_id = f"chatcmpl-sim-{request_id.removeprefix('req_sim_')}"
        created = int(self.clock())
        if request.stream:
            chunks = openai_chat.stream_chunks(completion_id, created, model.id, generation,
                                               usage, request.include_usage)
        else:
            chunks = [json_bytes(openai_chat.completion_json(completion_id, created, model.id,
                                                             generation, usage))]
        return _Answer(
            chunks=chunks,
            streaming=request.stream,
            model=model.id,
            usage=openai_chat.usage_json(usage, generation),
            tokens=TokenCounts.of(usage, generation.output_tokens, generation.reasoning_tokens),
            stop_reason=openai_chat.finish_reason(generation),
            source=reply.source,
            knowledge=reply.knowledge,
            skipped=reply.skipped,
        )

    def _answer_responses(self, body: Any, fault: Fault | None, request_id: str,
                          http: Request) -> _Answer:
        request = openai_responses.parse_request(body, self.registry, self._responses.get)
        model = request.model
        prompt = request.prompt_tokens
        if prompt > model.context_window or _forced_overflow(fault):
            raise openai_responses.context_length_exceeded()
        _refuse_too_large(fault, model, prompt + request.max_output_tokens)
        response_id = f"resp_sim_{request_id.removeprefix('req_sim_')}"
        usage = self.openai_cache.apply(model.id, request.cache, request.blocks)
        spent = TokenCounts.of(usage, 0)
        compaction: dict[str, Any] | None = None
        threshold = request.compact_threshold
        if threshold is not None and prompt > (threshold or _default_threshold(model)):
            # Compacted in the same stream: the answer is made from the user's messages and
            # the compaction item alone.
            summary = compaction_summary(request.transcript, None, self.summariser)
            compaction = openai_responses.compaction_item(response_id, summary)
            spent = TokenCounts.of(usage, summary_tokens(summary))
            request = openai_responses.parse_request(
                {**body, "input": [*request.user_items, compaction], "stream": request.stream,
                 "previous_response_id": None},
                self.registry, self._responses.get)
            prompt = request.prompt_tokens
            usage = self.openai_cache.apply(model.id, request.cache, request.blocks)
        thinking: ThinkingMode = "none"
        if model.reasoning:
            thinking = "shown" if request.shows_reasoning_summary else "hidden"
        reply, generation = self._reply(request.transcript, "call", model, prompt,
                                         request.max_output_tokens, thinking)
        created = float(int(self.clock()))
        items = openai_responses.output_items(response_id, request, generation, compaction)
        if request.store:
            self._responses[response_id] = [*request.items, *items]
            while len(self._responses) > _STORED_RESPONSES:
                self._responses.popitem(last=False)
        if compaction is None:
            tokens = TokenCounts.of(usage, generation.output_tokens, generation.reasoning_tokens)
        else:
            tokens = spent.plus(TokenCounts.of(usage, generation.output_tokens,
                                               generation.reasoning_tokens))
        usage_body = openai_responses.tokens_usage_json(
            CacheUsage(tokens.input, tokens.cache_read, tokens.cache_write_5m,
                       tokens.cache_write_1h), tokens.output, tokens.reasoning)
        if request.stream:
            chunks = openai_responses.stream_events(response_id, created, request, generation,
                                                    usage_body, items)
        else:
            chunks = [json_bytes(openai_responses.response_json(
                response_id, created, request, generation, usage_body, items))]
        return _Answer(
            chunks=chunks,
            streaming=request.stream,
            model=model.id,
            usage=usage_body,
            tokens=tokens,
            stop_reason="incomplete" if generation.truncated else "completed",
            source=reply.source,
            knowledge=reply.knowledge,
            compactions=int(compaction is not None),
            skipped=reply.skipped,
        )

    def _answer_compact(self, body: Any, fault: Fault | None, request_id: str,
                        http: Request) -> _Answer:
        """`POST /responses/compact`: the user messages and one compaction item, which a
        later request sends in place of what it summarises."""
        request = openai_responses.parse_request(body, self.registry, self._responses.get,
                                                 compact=True)
        model = request.model
        if request.prompt_tokens > model.context_window or _forced_overflow(fault):
            raise openai_responses.context_length_exceeded()
        _refuse_too_large(fault, model, request.prompt_tokens)
        read = self.openai_cache.apply(model.id, request.cache, request.blocks)
        usage = CacheUsage(read.input + instruction_tokens(None), read.cache_read,
                           read.cache_write_5m, read.cache_write_1h)
        summary = compaction_summary(request.transcript, None, self.summariser)
        response_id = f"resp_sim_{request_id.removeprefix('req_sim_')}"
        output = openai_responses.compacted_output(response_id, request, summary)
        usage_body = openai_responses.tokens_usage_json(usage, summary_tokens(summary))
        answer = openai_responses.compacted_response_json(
            response_id, float(int(self.clock())), request, output, usage_body)
        return _Answer(chunks=[json_bytes(answer)], streaming=False, model=model.id,
                       usage=usage_body, tokens=TokenCounts.of(usage, summary_tokens(summary)),
                       stop_reason="completed", source="summary", knowledge=(), compactions=1)

    def _reply(self, transcript: Transcript, id_prefix: str, model: ModelInfo, prompt: int,
               max_tokens: int, thinking: ThinkingMode) -> tuple[PlannedReply, Generation]:
        """(what answered, the output) for one request."""
        reply = plan_reply(transcript, self.scenario, id_prefix=id_prefix,
                           summariser=self.summariser, summary_chars=self.summary_chars,
                           refetches=self._refetches)
        self._refetches.count(reply)
        generation = generate(reply, prompt_tokens=prompt, max_tokens=max_tokens,
                              context_window=model.context_window, thinking=thinking)
        return reply, generation

    # --- other endpoints --------------------------------------------------------------------

    async def _count_tokens(self, request: Request) -> ASGIApp:
        request_id = self._next_id()
        body, logged = _decode(await request.body())
        base = {"method": "POST", "path": request.url.path, "api": "anthropic-count-tokens",
                "request": logged, "request_id": request_id}
        try:
            if not _has_key(request, "anthropic"):
                raise _no_key("anthropic")
            if isinstance(body, _Malformed):
                raise _malformed_rejection("anthropic", body.detail)
            betas = anthropic_api.betas_of(request.headers.get("anthropic-beta"))
            parsed = anthropic_api.parse_request(body, self.registry, count_only=True,
                                                 betas=betas)
        except RequestRejected as rejection:
            self._record(base, rejection.status, error=rejection.message)
            return self._error_response("anthropic", rejection, request_id, 0.0)
        result = anthropic_api.count_tokens_json(parsed)
        self._record(base, 200, model=parsed.model.id, usage=result)
        return JSONResponse(result, headers={"request-id": request_id})

    async def _models(self, request: Request) -> ASGIApp:
        return self._models_answer(request, None)

    async def _model(self, request: Request) -> ASGIApp:
        return self._models_answer(request, str(request.path_params["model_id"]))

    def _models_answer(self, request: Request, model_id: str | None) -> ASGIApp:
        api = _api_of(request)
        request_id = self._next_id()
        base = {"method": "GET", "path": request.url.path, "api": f"{api}-models",
                "request": None, "request_id": request_id}
        if not _has_key(request, api):
            rejection = _no_key(api)
            self._record(base, rejection.status, error=rejection.message)
            return self._error_response(api, rejection, request_id, 0.0)
        models = [model for model in self.registry if _serves(api, model)]
        if model_id is not None:
            found = next((model for model in models if model.id == model_id), None)
            if found is None:
                rejection = (
                    RequestRejected(404, f"model: {model_id}", "not_found_error")
                    if api == "anthropic"
                    else RequestRejected(404, f"The model '{model_id}' does not exist",
                                         "invalid_request_error", param="model",
                                         code="model_not_found")
                )
                self._record(base, 404, error=rejection.message)
                return self._error_response(api, rejection, request_id, 0.0)
            body = (anthropic_api.model_json(found) if api == "anthropic"
                    else openai_errors.model_json(found))
        elif api == "anthropic":
            try:
                body = anthropic_api.models_page(models, request.query_params)
            except RequestRejected as rejection:
                self._record(base, rejection.status, error=rejection.message)
                return self._error_response(api, rejection, request_id, 0.0)
        else:
            body = openai_errors.models_json(models)
        self._record(base, 200)
        return JSONResponse(body, headers=_id_header(api, request_id))

    async def _faults_endpoint(self, request: Request) -> Response:
        if request.method == "POST":
            body, _ = _decode(await request.body())
            spec = body.get("spec") if isinstance(body, dict) else None
            if spec is not None and not isinstance(spec, str):
                return JSONResponse({"error": "expected {\"spec\": \"429@1,...\"}"}, 400)
            try:
                self.set_faults(spec)
            except ValueError as exc:
                return JSONResponse({"error": str(exc)}, 400)
        return JSONResponse({"spec": self.faults.plan.spec})

    async def _records_endpoint(self, request: Request) -> Response:
        return JSONResponse({"records": [record.to_json() for record in self.records]})

    async def _reset_endpoint(self, request: Request) -> Response:
        self.reset()
        return JSONResponse({"ok": True})

    # --- plumbing ---------------------------------------------------------------------------

    def _next_id(self) -> str:
        self._serial += 1
        return f"req_sim_{self._serial:06d}"

    def _record(self, base: dict[str, Any], status: int, **fields: Any) -> None:
        self._log.add(RequestRecord(time=self.clock(), status=status, **base, **fields))

    def _error_response(self, api: ApiName, rejection: RequestRejected, request_id: str,
                        delay: float) -> ASGIApp:
        body = (anthropic_api.error_body(rejection, request_id) if api == "anthropic"
                else openai_errors.error_body(rejection))
        headers = {**_id_header(api, request_id), **rejection.headers}
        return ChunkedResponse([json_bytes(body)], status=rejection.status, headers=headers,
                               delay=delay)

    def _answer_response(self, api: ApiName, answer: _Answer, request_id: str,
                         decision: FaultDecision) -> ASGIApp:
        fault = decision.fault
        drop_after: int | None = None
        if fault is not None and fault.kind == "drop":
            drop_after = int(fault.param if fault.param is not None else 3)
        return ChunkedResponse(
            answer.chunks,
            media_type="text/event-stream; charset=utf-8" if answer.streaming
            else "application/json",
            headers=_id_header(api, request_id),
            delay=decision.delay,
            drop_after=drop_after,
            streaming=answer.streaming,
        )


# --- module helpers -------------------------------------------------------------------------


def _decode(raw: bytes) -> tuple[Any, Any]:
    """(parsed body or _Malformed, what the log keeps)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _Malformed(f"invalid UTF-8: {exc}"), raw.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        return _Malformed(str(exc)), text
    return body, body


def _api_of(request: Request) -> ApiName:
    return "anthropic" if "anthropic-version" in request.headers else "openai"


def _serves(api: ApiName, model: ModelInfo) -> bool:
    """Whether `api`'s model list shows `model`: its own vendor's models and the simulator's."""
    return model.vendor in (api, "sim") or model.vendor not in ("anthropic", "openai")


def _has_key(request: Request, api: ApiName) -> bool:
    authorization = request.headers.get("authorization", "")
    if authorization.lower().startswith("bearer ") and authorization[7:].strip():
        return True
    return api == "anthropic" and bool(request.headers.get("x-api-key", "").strip())


def _no_key(api: ApiName) -> RequestRejected:
    if api == "anthropic":
        return RequestRejected(401, "x-api-key header is required", "authentication_error")
    return RequestRejected(401, _OPENAI_NO_KEY, "invalid_request_error")


def _malformed_rejection(api: ApiName, detail: str) -> RequestRejected:
    if api == "anthropic":
        return RequestRejected(400, f"The request body is not valid JSON: {detail}")
    return RequestRejected(400, _OPENAI_BAD_JSON)


def _access_rejection(api: ApiName, fault: Fault) -> RequestRejected:
    """A 401 (the key is refused) or a 403 (it may not do this), as each API answers."""
    if api == "anthropic":
        if fault.kind == "401":
            return RequestRejected(401, "invalid x-api-key", "authentication_error")
        return RequestRejected(
            403, "Your API key does not have permission to use the specified resource.",
            "permission_error",
        )
    if fault.kind == "401":
        return RequestRejected(
            401,
            "Incorrect API key provided. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            code="invalid_api_key",
        )
    return RequestRejected(
        403, "Project `proj_sim` does not have access to the requested model.",
        code="model_not_found",
    )


def _fault_rejection(api: ApiName, fault: Fault) -> RequestRejected:
    if fault.kind in ("401", "403"):
        return _access_rejection(api, fault)
    headers: dict[str, str] = {}
    if fault.param is not None:
        headers["retry-after"] = f"{fault.param:g}"
    if api == "anthropic":
        if fault.kind == "429":
            return RequestRejected(
                429,
                "This request would exceed the rate limit for your organization of 50,000 input "
                "tokens per minute. For details, refer to: https://docs.claude.com/en/api/"
                "rate-limits. You can see the response headers for current usage. Please reduce "
                "the prompt length or the maximum tokens requested, or try again later.",
                "rate_limit_error",
                headers=headers,
            )
        if fault.kind == "529":
            return RequestRejected(529, "Overloaded", "overloaded_error", headers=headers)
        return RequestRejected(500, "Internal server error", "api_error", headers=headers)
    if fault.kind == "429":
        wait = f"{fault.param:g}s" if fault.param is not None else "1s"
        return RequestRejected(
            429,
            f"Rate limit reached for requests. Please try again in {wait}. Visit "
            "https://platform.openai.com/account/rate-limits to learn more.",
            "requests",
            code="rate_limit_exceeded",
            headers=headers,
        )
    if fault.kind == "529":
        return RequestRejected(503, "The server is overloaded or not ready yet.", "server_error",
                               headers=headers)
    return RequestRejected(
        500,
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        headers=headers,
    )


def _refuse_too_large(fault: Fault | None, model: ModelInfo, requested: int) -> None:
    if fault is not None and fault.kind == "toolarge":
        limit = int(fault.param) if fault.param is not None else 6000
        raise openai_errors.request_too_large(model.id, limit, requested)


def _cut_to_num_ctx(fault: Fault | None, usage: CacheUsage) -> CacheUsage:
    """The usage Ollama reports for a prompt longer than its `num_ctx`: the prompt was cut
    from the start without an error, and the count is of what was kept."""
    if fault is None or fault.kind != "numctx":
        return usage
    num_ctx = int(fault.param) if fault.param is not None else 4096
    return usage if usage.prompt_tokens <= num_ctx else CacheUsage(input=num_ctx)


def _default_threshold(model: ModelInfo) -> int:
    """The compact_threshold of a compaction entry that gives none (the documentation gives
    no default: 90% of the window, where Codex compacts)."""
    return model.context_window * 9 // 10


def _forced_overflow(fault: Fault | None) -> bool:
    return fault is not None and fault.kind == "overflow"


def _id_header(api: ApiName, request_id: str) -> dict[str, str]:
    return {"request-id": request_id} if api == "anthropic" else {"x-request-id": request_id}

