/** A `slug` field. */
import { InputField } from "./InputField";
import type { FieldProps } from "./types";

export const SlugField = (p: FieldProps) => <InputField {...p} type="text" />;
