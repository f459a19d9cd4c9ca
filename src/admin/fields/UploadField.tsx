/** An `upload` field: any file of the media library, restricted by `accept`. */
import { MediaField } from "./MediaField";
import type { FieldProps } from "./types";

export const UploadField = (p: FieldProps) => <MediaField {...p} />;
