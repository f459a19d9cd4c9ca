/** A `color` field. */
import { InputField } from "./InputField";
import type { FieldProps } from "./types";

export const ColorField = (p: FieldProps) => <InputField {...p} type="color" />;
