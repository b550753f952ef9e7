// The executor inbox's bodies judged alone (runs supplement "Executor inbox"): every commit,
// extend and progress code in the supplement's order (a body with two faults answers the earlier
// one), each code at the status of the spec's table, and what an accepted body becomes.
import { statusOfCode } from "@troupe/contracts/Errors"
import {
  inboxLimits,
  judgeCommitBody,
  judgeExtendBody,
  judgeProgressBody,
  resultUploadIds
} from "@troupe/domain/runs/InboxBodies"
import { describe, expect, it } from "vitest"

const mine = "0190f3a2-0000-7000-8000-0000000000aa"
const theirs = "0190f3a2-0000-7000-8000-0000000000bb"
const ownUpload = (publicId: string) => publicId === mine

const link = (id = mine) => ({ type: "resource_link", uri: `svc://uploads/${id}`, name: "report.txt" })
const commit = (members: Record<string, unknown>) => ({ claim_token: "tok", content: "done", ...members })
const blocks = (n: number) => Array.from({ length: n }, () => ({ type: "text", text: "x" }))

/** Each row: a body and the code it answers; rows are in the supplement's order. */
const commitFaults: ReadonlyArray<readonly [string, unknown, string, string]> = [
  ["a body that is not an object", ["done"], "parameter_invalid", "body"],
  ["content absent", { claim_token: "tok" }, "invalid_content", "content"],
  ["content a number", commit({ content: 7 }), "invalid_content", "content"],
  ["a block not an object", commit({ content: ["x"] }), "invalid_content", "content"],
  ["a block without type", commit({ content: [{ text: "x" }] }), "invalid_content", "content"],
  ["text without text", commit({ content: [{ type: "text" }] }), "invalid_content", "content"],
  ["a link without uri", commit({ content: [{ type: "resource_link", name: "n" }] }), "invalid_content", "content"],
  ["a link without name", commit({ content: [{ ...link(), name: undefined }] }), "invalid_content", "content"],
  ["a link with a bad size", commit({ content: [{ ...link(), size: -1 }] }), "invalid_content", "content"],
  ["an image block", commit({ content: [{ type: "image", data: "..." }] }), "validation_failed", "content"],
  ["257 blocks", commit({ content: blocks(257) }), "too_many_content_blocks", "content"],
  ["a link to another's upload", commit({ content: [link(theirs)] }), "unknown_result_upload", "content"],
  [
    "a link outside svc://uploads/",
    commit({ content: [{ ...link(), uri: "https://x/y" }] }),
    "unknown_result_upload",
    "content"
  ],
  [
    "a link to an upload's child path",
    commit({ content: [{ ...link(), uri: `svc://uploads/${mine}/x` }] }),
    "unknown_result_upload",
    "content"
  ],
  ["outcome unknown", commit({ outcome: "succeeded" }), "validation_failed", "outcome"],
  ["outcome null", commit({ outcome: null }), "validation_failed", "outcome"],
  ["is_error a string", commit({ is_error: "true" }), "validation_failed", "is_error"],
  ["title a number", commit({ title: 1 }), "invalid_title", "title"],
  ["title of 256 characters", commit({ title: "t".repeat(256) }), "invalid_title", "title"],
  ["metadata a list", commit({ metadata: [] }), "invalid_metadata", "metadata"],
  ["result_type empty", commit({ result_type: "" }), "invalid_result_type", "result_type"],
  ["result_type of 65 characters", commit({ result_type: "r".repeat(65) }), "invalid_result_type", "result_type"],
  ["result_type a number", commit({ result_type: 3 }), "invalid_result_type", "result_type"],
  ["metadata over 16 KiB", commit({ metadata: { note: "m".repeat(16 * 1024) } }), "content_too_large", "metadata"],
  ["content over 1 MB", commit({ content: "c".repeat(1_000_000) }), "content_too_large", "content"],
  [
    "structured_content over 1 MB",
    commit({ structured_content: { s: "s".repeat(999_990) } }),
    "content_too_large",
    "content"
  ]
]

/** Each row: a body with two faults, and the earlier one's code. */
const commitPairs: ReadonlyArray<readonly [string, unknown, string]> = [
  [
    "a lacking block before an unknown type",
    commit({ content: [{ type: "image" }, { type: "text" }] }),
    "invalid_content"
  ],
  [
    "an unknown type before too many blocks",
    commit({ content: [...blocks(300), { type: "image" }] }),
    "validation_failed"
  ],
  [
    "too many blocks before a foreign link",
    commit({ content: [...blocks(300), link(theirs)] }),
    "too_many_content_blocks"
  ],
  ["a foreign link before outcome", commit({ content: [link(theirs)], outcome: "x" }), "unknown_result_upload"],
  ["outcome before is_error", commit({ outcome: "x", is_error: "x" }), "validation_failed"],
  ["is_error before title", commit({ is_error: 1, title: 1 }), "validation_failed"],
  ["title before metadata", commit({ title: 1, metadata: 1 }), "invalid_title"],
  ["metadata before result_type", commit({ metadata: "x", result_type: "" }), "invalid_metadata"],
  ["result_type before the bound", commit({ result_type: "", content: "c".repeat(1_000_001) }), "invalid_result_type"],
  ["content before every member", commit({ content: 1, outcome: "x", title: 1 }), "invalid_content"]
]

describe("judgeCommitBody", () => {
  it.each(commitFaults)("%s", (_, body, code, field) => {
    const judged = judgeCommitBody(body, ownUpload)
    expect(judged.fault).toMatchObject({ code, field, status: statusOfCode[code as keyof typeof statusOfCode] })
  })

  it.each(commitPairs)("%s", (_, body, code) => {
    expect(judgeCommitBody(body, ownUpload).fault?.code).toBe(code)
  })

  it("reports the claim token apart from the body's faults, absent or blank as undefined", () => {
    expect(judgeCommitBody(commit({}), ownUpload).claimToken).toBe("tok")
    expect(judgeCommitBody(commit({ claim_token: undefined }), ownUpload)).toMatchObject({
      claimToken: undefined,
      fault: null
    })
    expect(judgeCommitBody(commit({ claim_token: "  " }), ownUpload).claimToken).toBeUndefined()
    expect(judgeCommitBody(commit({ claim_token: 5, content: 5 }), ownUpload)).toMatchObject({
      claimToken: undefined,
      fault: { code: "invalid_content" }
    })
  })

  it("accepts the bounds themselves", () => {
    const judged = judgeCommitBody(
      commit({
        content: blocks(inboxLimits.contentBlocks),
        title: "t".repeat(255),
        result_type: "r".repeat(64),
        metadata: { note: "m".repeat(16 * 1024 - 11) }
      }),
      ownUpload
    )
    expect(judged.fault).toBeNull()
  })

  it("reads a string content as one text block, defaulting outcome and checkpoint", () => {
    expect(judgeCommitBody(commit({}), ownUpload)).toEqual({
      claimToken: "tok",
      fault: null,
      outcome: "completed",
      result: { content: [{ type: "text", text: "done" }], output: "done" },
      checkpoint: null
    })
  })

  it("keeps every member and a link's extras, joining the text blocks as output", () => {
    const judged = judgeCommitBody(
      commit({
        content: [
          { type: "text", text: "one", extra: 1 },
          { ...link(), mimeType: "text/plain", size: 12, title: "Report", description: "The build log" },
          { type: "text", text: "two" }
        ],
        structured_content: { passed: 3 },
        is_error: true,
        outcome: "failed",
        title: "Build",
        metadata: { checkpoint: "abc123" },
        result_type: "build_report"
      }),
      ownUpload
    )
    expect(judged).toEqual({
      claimToken: "tok",
      fault: null,
      outcome: "failed",
      result: {
        content: [
          { type: "text", text: "one" },
          {
            type: "resource_link",
            uri: `svc://uploads/${mine}`,
            name: "report.txt",
            mimeType: "text/plain",
            size: 12,
            title: "Report",
            description: "The build log"
          },
          { type: "text", text: "two" }
        ],
        output: "one\ntwo",
        structured_content: { passed: 3 },
        is_error: true,
        title: "Build",
        metadata: { checkpoint: "abc123" },
        result_type: "build_report"
      },
      checkpoint: "abc123"
    })
  })

  it("lists the uploads a body's links name, for the caller to load first", () => {
    const body = commit({
      content: [link(), { type: "text", text: "x" }, link(theirs), { ...link(), uri: "https://x" }]
    })
    expect(resultUploadIds(body)).toEqual([mine, theirs])
    expect(resultUploadIds(commit({}))).toEqual([])
  })
})

const extendFaults: ReadonlyArray<readonly [string, unknown, string, string]> = [
  ["not an object", "x", "parameter_missing", "claim_token"],
  ["claim_token absent", { timeout_ms: 1000 }, "parameter_missing", "claim_token"],
  ["claim_token blank, timeout_ms bad", { claim_token: "", timeout_ms: -1 }, "parameter_missing", "claim_token"],
  ["timeout_ms absent", { claim_token: "tok" }, "invalid_timeout_ms", "timeout_ms"],
  ["timeout_ms zero", { claim_token: "tok", timeout_ms: 0 }, "invalid_timeout_ms", "timeout_ms"],
  ["timeout_ms fractional", { claim_token: "tok", timeout_ms: 1.5 }, "invalid_timeout_ms", "timeout_ms"],
  ["timeout_ms a string", { claim_token: "tok", timeout_ms: "1000" }, "invalid_timeout_ms", "timeout_ms"],
  ["timeout_ms over one hour", { claim_token: "tok", timeout_ms: 3_600_001 }, "extension_too_long", "timeout_ms"],
  ["timeout_ms huge", { claim_token: "tok", timeout_ms: 1e20 }, "extension_too_long", "timeout_ms"]
]

describe("judgeExtendBody", () => {
  it.each(extendFaults)("%s", (_, body, code, field) => {
    expect(judgeExtendBody(body).fault).toMatchObject({
      code,
      field,
      status: statusOfCode[code as keyof typeof statusOfCode]
    })
  })

  it("accepts one hour exactly", () => {
    expect(judgeExtendBody({ claim_token: "tok", timeout_ms: 3_600_000 })).toEqual({
      claimToken: "tok",
      fault: null,
      timeoutMs: 3_600_000
    })
  })
})

const taskFrame = { run_public_id: "run-1", task_key: "build-1", claim_token: "tok" }
const processFrame = {
  conversation_public_id: "conv-1",
  process_id: "p-1",
  source: { run_public_id: "run-1", task_key: "build-1", claim_token: "tok" },
  lines: ["compiling"],
  exit: null
}

const progressFaults: ReadonlyArray<readonly [string, unknown, string]> = [
  ["no frame", {}, "parameter_missing"],
  ["a body that is not an object", [], "parameter_missing"],
  ["frame null", { frame: null }, "parameter_invalid"],
  ["frame a list", { frame: [taskFrame] }, "parameter_invalid"],
  ["an empty frame", { frame: {} }, "invalid_frame"],
  ["a task frame without claim_token", { frame: { ...taskFrame, claim_token: undefined } }, "invalid_frame"],
  ["a task frame with text_tail a number", { frame: { ...taskFrame, text_tail: 1 } }, "invalid_frame"],
  ["a task frame with structured a list", { frame: { ...taskFrame, structured: [] } }, "invalid_frame"],
  [
    "a process frame without a subject",
    { frame: { ...processFrame, conversation_public_id: undefined } },
    "invalid_frame"
  ],
  [
    "a process frame with a partial source",
    { frame: { ...processFrame, source: { run_public_id: "r" } } },
    "invalid_frame"
  ],
  ["a process frame with a number line", { frame: { ...processFrame, lines: [1] } }, "invalid_frame"],
  ["a process frame without exit", { frame: { ...processFrame, exit: undefined } }, "invalid_frame"],
  ["a process frame with a fractional exit", { frame: { ...processFrame, exit: 1.5 } }, "invalid_frame"],
  ["a task frame over 16 KiB", { frame: { ...taskFrame, text_tail: "t".repeat(16 * 1024) } }, "content_too_large"],
  ["an incomplete frame over 16 KiB", { frame: { text_tail: "t".repeat(20_000) } }, "invalid_frame"]
]

describe("judgeProgressBody", () => {
  it.each(progressFaults)("%s", (_, body, code) => {
    expect(judgeProgressBody(body).fault).toMatchObject({
      code,
      field: "frame",
      status: statusOfCode[code as keyof typeof statusOfCode]
    })
  })

  it("reads a task frame, dropping unknown members", () => {
    expect(judgeProgressBody({ frame: { ...taskFrame, text_tail: "ok", structured: { step: 2 }, extra: 1 } })).toEqual({
      fault: null,
      frame: { kind: "task", ...taskFrame, text_tail: "ok", structured: { step: 2 } }
    })
  })

  it("reads a process frame of a conversation or of a standalone run", () => {
    expect(judgeProgressBody({ frame: { ...processFrame, exit: 0 } })).toEqual({
      fault: null,
      frame: { kind: "process", ...processFrame, exit: 0 }
    })
    const standalone = { ...processFrame, conversation_public_id: undefined, run_public_id: "run-2" }
    expect(judgeProgressBody({ frame: standalone })).toEqual({
      fault: null,
      frame: {
        kind: "process",
        run_public_id: "run-2",
        process_id: "p-1",
        source: processFrame.source,
        lines: ["compiling"],
        exit: null
      }
    })
  })
})
