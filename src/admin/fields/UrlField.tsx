/** A `url` field. */
import { InputField } from "./InputField";
import type { FieldProps } from "./types";

export const UrlField = (p: FieldProps) => <InputField {...p} type="url" />;
