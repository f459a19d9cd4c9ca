/** A `text` field. */
import { InputField } from "./InputField";
import type { FieldProps } from "./types";

export const TextField = (p: FieldProps) => <InputField {...p} type="text" />;
