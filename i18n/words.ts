// Every language's words, by language: the one place that gathers the ten dictionaries.
import type { Dictionary } from './dictionary';
import type { Language } from './languages';
import { en } from './en';
import { pt } from './pt';
import { es } from './es';
import { fr } from './fr';
import { de } from './de';
import { it } from './it';
import { ja } from './ja';
import { ko } from './ko';
import { ru } from './ru';
import { zh } from './zh';

export const DICTIONARIES: Record<Language, Dictionary> = { en, pt, es, fr, de, it, ja, ko, ru, zh };
