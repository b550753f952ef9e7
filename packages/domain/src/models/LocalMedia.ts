// The bytes the local image and speech models answer with: a 64×64 RGB PNG and a 16 kHz mono
// 16-bit WAV, both derived from SHA-256 so the same prompt gives the same bytes. The PNG is
// written by hand over node:zlib (deflate and CRC-32): four chunks need no library.
import { createHash } from "node:crypto"
import { crc32, deflateSync } from "node:zlib"

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest()

// ---------------------------------------------------------------------------------------------
// PNG

export const pngSize = 64
const pngSignature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** One chunk: length, type, data, CRC-32 of type and data. */
const pngChunk = (type: string, data: Buffer) => {
  const typed = Buffer.concat([Buffer.from(type, "latin1"), data])
  const framed = Buffer.alloc(typed.length + 8)
  framed.writeUInt32BE(data.length, 0)
  typed.copy(framed, 4)
  framed.writeUInt32BE(crc32(typed), typed.length + 4)
  return framed
}

/**
 * A 64×64 truecolour PNG of an 8×8 grid of 8-pixel cells, each cell's colour three bytes of
 * SHA-256(prompt).
 */
export const localPng = (prompt: string): Uint8Array => {
  const digest = sha256(prompt)
  const rowBytes = 1 + pngSize * 3
  const raw = Buffer.alloc(rowBytes * pngSize)
  for (let y = 0; y < pngSize; y++) {
    // Each row starts with filter type 0 (none), left as the zero Buffer.alloc gives.
    for (let x = 0; x < pngSize; x++) {
      const cell = (y >> 3) * 8 + (x >> 3)
      const at = y * rowBytes + 1 + x * 3
      raw[at] = digest[cell % 32]!
      raw[at + 1] = digest[(cell + 11) % 32]!
      raw[at + 2] = digest[(cell + 23) % 32]!
    }
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(pngSize, 0)
  header.writeUInt32BE(pngSize, 4)
  // Bit depth 8, colour type 2 (RGB), compression 0, filter 0, no interlace.
  header.set([8, 2, 0, 0, 0], 8)
  return Buffer.concat([
    pngSignature,
    pngChunk("IHDR", header),
    pngChunk("IDAT", deflateSync(raw)),
    pngChunk("IEND", Buffer.alloc(0))
  ])
}

// ---------------------------------------------------------------------------------------------
// WAV

export const wavSampleRate = 16_000
/** 100 ms of 16-bit mono samples at 16 kHz. */
export const wavBytesPerWord = 3_200
export const wavHeaderBytes = 44

/** The words a prompt speaks: its runs of non-whitespace. */
export const spokenWords = (prompt: string): ReadonlyArray<string> => prompt.split(/\s+/).filter((word) => word !== "")

/**
 * A 16 kHz mono 16-bit PCM WAV, 100 ms per word: each word a triangle wave whose period (from
 * SHA-256 of the word) puts it between about 160 Hz and 1 kHz. 44 + 3200 × words bytes.
 */
export const localWav = (prompt: string): Uint8Array => {
  const words = spokenWords(prompt)
  const dataBytes = words.length * wavBytesPerWord
  const wav = Buffer.alloc(wavHeaderBytes + dataBytes)
  wav.write("RIFF", 0, "latin1")
  wav.writeUInt32LE(36 + dataBytes, 4)
  wav.write("WAVE", 8, "latin1")
  wav.write("fmt ", 12, "latin1")
  wav.writeUInt32LE(16, 16)
  wav.writeUInt16LE(1, 20) // PCM
  wav.writeUInt16LE(1, 22) // mono
  wav.writeUInt32LE(wavSampleRate, 24)
  wav.writeUInt32LE(wavSampleRate * 2, 28)
  wav.writeUInt16LE(2, 32)
  wav.writeUInt16LE(16, 34)
  wav.write("data", 36, "latin1")
  wav.writeUInt32LE(dataBytes, 40)
  const amplitude = 8_192
  for (const [index, word] of words.entries()) {
    const period = 16 + (sha256(word)[0]! % 84)
    const half = period / 2
    const start = wavHeaderBytes + index * wavBytesPerWord
    for (let sample = 0; sample < wavBytesPerWord / 2; sample++) {
      const phase = sample % period
      const rising = phase < half ? phase : period - phase
      wav.writeInt16LE(Math.round((rising / half) * 2 * amplitude - amplitude), start + sample * 2)
    }
  }
  return wav
}
