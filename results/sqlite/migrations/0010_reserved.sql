-- 0010: reserved for the change being made on main at the same time; this
-- placeholder keeps the numbering consecutive on the branch and is to be
-- replaced by main's 0010 when the branches meet.
SELECT 1;
