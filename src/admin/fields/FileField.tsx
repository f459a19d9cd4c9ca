/** A `file` field: one file of the media library, restricted by `accept`. */
import { MediaField } from "./MediaField";
import type { FieldProps } from "./types";

export const FileField = (p: FieldProps) => <MediaField {...p} />;
