
\ir ../functions/chash_suggest_pins/1.2.sql
