// Inline representations of an image upload (supplement "Uploads"), rendered with `sharp`
// (libvips): only PNG, JPEG, GIF (its first frame) and WebP; the longest edge at most 256 px
// (thumbnail) or 1600 px (preview), the aspect kept (each side rounded, at least 1 px), never
// enlarged, oriented by its EXIF tag; JPEG answers image/jpeg, the others image/png. Keeping
// what was rendered is the Uploads service's business.
import type { RepresentationKind, UploadContentType } from "@troupe/storage/repositories/Uploads"
import { Effect } from "effect"
import sharp from "sharp"

export const representationKinds: ReadonlyArray<RepresentationKind> = ["thumbnail", "preview"]

/** The bound of each kind's longest edge, in pixels. */
export const longestEdge: Readonly<Record<RepresentationKind, number>> = { thumbnail: 256, preview: 1600 }

const renderable = new Set<UploadContentType>(["image/png", "image/jpeg", "image/gif", "image/webp"])

export interface Rendered {
  readonly bytes: Uint8Array
  readonly contentType: "image/png" | "image/jpeg"
  readonly width: number
  readonly height: number
}

/** The size an image of `width` × `height` takes under `bound`: aspect kept, never enlarged. */
export const fittedSize = (width: number, height: number, bound: number) => {
  const scale = Math.min(1, bound / Math.max(width, height))
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) }
}

/** Whether uploads of this type have representations at all. */
export const hasRepresentations = (contentType: UploadContentType) => renderable.has(contentType)

/** The representation of the image file at `path`; undefined when its bytes cannot be rendered. */
export const render = (
  path: string,
  contentType: UploadContentType,
  kind: RepresentationKind
): Effect.Effect<Rendered | undefined> =>
  Effect.tryPromise(async () => {
    const image = sharp(path, { autoOrient: true })
    const { width, height } = (await image.metadata()).autoOrient
    const size = fittedSize(width, height, longestEdge[kind])
    const resized = image.resize(size.width, size.height, { fit: "fill" })
    const jpeg = contentType === "image/jpeg"
    const { data, info } = await (jpeg ? resized.jpeg() : resized.png()).toBuffer({ resolveWithObject: true })
    return {
      bytes: data,
      contentType: jpeg ? "image/jpeg" : "image/png",
      width: info.width,
      height: info.height
    } as const
  }).pipe(
    Effect.orElseSucceed(() => undefined),
    Effect.withSpan("Representations.render", { attributes: { kind } })
  )
