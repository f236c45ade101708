// hookgate extension for Pi (managed by `hookgate install --harness pi`).
//
// Pi has no subprocess hook protocol: this extension runs hookgate on every
// tool_call with a synthesized payload and blocks the call unless hookgate
// answers {"block":false} with exit 0 in time. A missing binary, a crash, a
// timeout, a non-zero exit or an unreadable answer all block.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { spawnSync } from "node:child_process";

const HOOKGATE = "/usr/local/bin/hookgate"; // hookgate-install: binary
const ARGS = ["check","--harness","pi"]; // hookgate-install: args
// Above hookgate's longest deadline (hooks.MaxDeadline, 8 s), as every
// harness timeout hookgate install writes is, so hookgate answers first.
const TIMEOUT_MS = 10000;

export function rule(toolName: string, toolCallId: string, input: unknown, cwd: string) {
	const payload = JSON.stringify({
		hook_event_name: "tool_call",
		tool_name: toolName,
		tool_call_id: toolCallId,
		tool_input: input && typeof input === "object" ? input : {},
		cwd,
	});
	// SIGKILL at the timeout: a child that survives SIGTERM (the default)
	// would keep spawnSync, and so Pi, waiting for good.
	const r = spawnSync(HOOKGATE, ARGS, { input: payload, timeout: TIMEOUT_MS, killSignal: "SIGKILL", encoding: "utf8", maxBuffer: 1 << 20 });
	if (r.error || r.signal || r.status !== 0) {
		const why = r.error ? String(r.error.message) : r.signal ? `killed by ${r.signal}` : (r.stderr || "").trim() || `exit ${r.status}`;
		return { block: true, reason: `hookgate: no ruling (${why}); denied` };
	}
	try {
		const answer = JSON.parse(r.stdout);
		if (answer && answer.block === false) {
			return undefined;
		}
		return { block: true, reason: typeof answer?.reason === "string" ? answer.reason : "hookgate: denied" };
	} catch {
		return { block: true, reason: "hookgate: unreadable answer; denied" };
	}
}

export default function (pi: ExtensionAPI) {
	pi.on("tool_call", async (event, ctx) => rule(event.toolName, event.toolCallId, event.input, ctx?.cwd ?? process.cwd()));
}
