/** A `date` field. */
import { InputField } from "./InputField";
import type { FieldProps } from "./types";

export const DateField = (p: FieldProps) => <InputField {...p} type="date" />;
