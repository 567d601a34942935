// The OpenAL back-end.
