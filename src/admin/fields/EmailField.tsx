/** A `email` field. */
import { InputField } from "./InputField";
import type { FieldProps } from "./types";

export const EmailField = (p: FieldProps) => <InputField {...p} type="email" />;
