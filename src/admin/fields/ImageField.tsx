/** An `image` field: one image of the media library (`accept` narrows it; default any image). */
import { MediaField } from "./MediaField";
import type { FieldProps } from "./types";

export const ImageField = (p: FieldProps) => <MediaField {...p} accept="image/*" />;
